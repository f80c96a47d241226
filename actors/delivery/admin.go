package delivery

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"docflow"
)

// AdminSender delivers events to the admin notification channels (the
// subscriber "admin"): one notification per event through every channel
// of NOTIFICATION_URLS. The attempt fails, and is retried like a
// webhook's, when any valid channel failed; a retry sends through every
// channel again (at least once, per channel).
type AdminSender struct {
	Notifier docflow.Notifier
}

// Send notifies the admins of d's event.
func (a AdminSender) Send(ctx context.Context, _ docflow.DeliveryTarget, d *docflow.EventDelivery) Result {
	rep := a.Notifier.Notify(ctx, AdminNotification(d.Event))
	// Only channels that can succeed on a later attempt make it fail: an
	// invalid entry is reported (logged, and by test-notification), never
	// retried; no channel left (NOTIFICATION_URLS emptied since the
	// fan-out) leaves nothing to send.
	var failed []string
	for _, r := range rep.Results {
		if !r.OK && !r.Invalid {
			failed = append(failed, r.Service+": "+r.Detail)
		}
	}
	if len(failed) == 0 {
		return Result{StatusCode: 200}
	}
	return Result{Err: fmt.Errorf("%s: %w", rep.Message, errors.New(strings.Join(failed, "; ")))}
}

// AdminNotification is the admin notification of ev.
func AdminNotification(ev docflow.Event) docflow.Notification {
	str := func(k string) string {
		switch v := ev.Data[k].(type) {
		case nil:
		case float64: // a number read back from JSON: 1000000, not 1e+06
			return strconv.FormatFloat(v, 'f', -1, 64)
		default:
			return fmt.Sprint(v)
		}
		return ""
	}
	switch ev.Name {
	case docflow.EventUserPaymentIssue:
		body := "User " + str("user_id") + " has a payment issue."
		if issue := str("issue"); issue != "" {
			body += "\n\n" + issue
		}
		return docflow.Notification{Title: "docflow: payment issue for user " + str("user_id"), Body: body}
	case docflow.EventDocumentFailed:
		name := str("filename")
		body := fmt.Sprintf("Document %q (file %s) failed processing after its retries, at step %s.", name, str("file_id"), str("step"))
		if e := str("error"); e != "" {
			body += "\n\nError: " + e
		}
		return docflow.Notification{Title: "docflow: document failed: " + name, Body: body}
	case docflow.EventIntegrationFailing:
		name := str("name")
		body := fmt.Sprintf("Integration %q (%s %s, id %s, owner %s) has been failing since %s.",
			name, str("integration_type"), strings.ToLower(str("direction")), str("integration_id"), str("owner_id"), str("failing_since"))
		if e := str("error"); e != "" {
			body += "\n\nLast error: " + e
		}
		body += "\n\nThis is sent once per failure: the next one comes after the integration has recovered and failed again."
		return docflow.Notification{Title: "docflow: integration failing: " + name, Body: body}
	}
	return docflow.Notification{Title: "docflow: " + ev.Name, Body: fmt.Sprintf("Event %s (%s) at %s.", ev.Name, ev.ID, ev.Timestamp.UTC().Format("2006-01-02 15:04:05 UTC"))}
}

// AdminEvents is the store's choice of the events that go to the admin
// channels: none while NOTIFICATION_URLS is empty; user.payment_issue
// always; document.failed when NOTIFY_ON_DOCUMENT_FAILED is on. Settings
// are read at each event.
func AdminEvents(settings docflow.SettingsStore) func(name string) bool {
	return func(name string) bool {
		if len(docflow.NotificationURLs.Get(settings)) == 0 {
			return false
		}
		switch name {
		case docflow.EventUserPaymentIssue:
			return true
		case docflow.EventDocumentFailed:
			return docflow.NotifyOnDocumentFailed.Get(settings)
		}
		return false
	}
}
