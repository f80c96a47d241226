package delivery_test

import (
	"context"
	"strings"
	"testing"

	"docflow"
	"docflow/actors/delivery"
)

type fakeNotifier struct {
	got []docflow.Notification
	rep docflow.NotificationReport
}

func (f *fakeNotifier) Notify(_ context.Context, n docflow.Notification) docflow.NotificationReport {
	f.got = append(f.got, n)
	return f.rep
}

// An admin delivery fails (and is retried) only when a valid channel
// failed: invalid entries and no channel at all are not worth a retry.
func TestAdminSender(t *testing.T) {
	t.Parallel()
	ev := docflow.Event{ID: "evt_1", Name: docflow.EventUserPaymentIssue,
		Data: map[string]any{"user_id": "ann@example.com", "issue": "card expired"}}
	d := &docflow.EventDelivery{ID: 1, EventID: ev.ID, Event: ev, Subscriber: docflow.Subscriber{Kind: docflow.SubscriberAdmin}}
	for _, tc := range []struct {
		results []docflow.NotificationResult
		fail    bool
	}{
		{nil, false},
		{[]docflow.NotificationResult{{Service: "json://h/***", OK: true}, {Service: "x://***", Detail: "invalid entry", Invalid: true}}, false},
		{[]docflow.NotificationResult{{Service: "json://h/***", OK: true}, {Service: "ntfy://h/***", Detail: "service answered 500"}}, true},
	} {
		f := &fakeNotifier{rep: docflow.NotificationReport{ServicesCount: len(tc.results), Results: tc.results, Message: "m"}}
		r := delivery.AdminSender{Notifier: f}.Send(context.Background(), docflow.DeliveryTarget{Found: true, Active: true}, d)
		if failed := r.Err != nil || r.StatusCode != 200; failed != tc.fail {
			t.Errorf("%v: %+v", tc.results, r)
		}
		if tc.fail && !strings.Contains(r.Err.Error(), "ntfy://h/***: service answered 500") {
			t.Errorf("error %v", r.Err)
		}
		if len(f.got) != 1 || !strings.Contains(f.got[0].Title, "payment issue for user ann@example.com") || !strings.Contains(f.got[0].Body, "card expired") {
			t.Errorf("notification %+v", f.got)
		}
	}
}

type envSettings map[string]string

func (s envSettings) Get(k string) string { return s[k] }
func (s envSettings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no")
}
func (s envSettings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (s envSettings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.EINVALID, "read only")
}
func (s envSettings) Delete(context.Context, string) error { return nil }

// Admin events: none without channels; payment issues always; failed
// documents only when opted in; nothing else.
func TestAdminEvents(t *testing.T) {
	t.Parallel()
	st := envSettings{}
	pick := delivery.AdminEvents(st)
	if pick(docflow.EventUserPaymentIssue) {
		t.Error("picked without channels")
	}
	st["NOTIFICATION_URLS"] = "json://h/x"
	if !pick(docflow.EventUserPaymentIssue) || pick(docflow.EventDocumentFailed) || pick(docflow.EventDocumentProcessed) {
		t.Error("wrong picks with channels")
	}
	st["NOTIFY_ON_DOCUMENT_FAILED"] = "true"
	if !pick(docflow.EventDocumentFailed) {
		t.Error("document.failed not picked when opted in")
	}
}
