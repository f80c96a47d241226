package notify

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/integrations/smtp"
	"docflow/internal/testsupport/mailpit"
)

// mailto reaches a real SMTP server (Mailpit) through the application's
// mailer, with SMTP authentication, and arrives at every recipient with
// its subject and body.
func TestMailtoThroughMailpit(t *testing.T) {
	mp := mailpit.Start(t)
	st := settings{"NOTIFICATION_URLS": "mailto://ops@example.com?to=audit@example.org",
		"SMTP_HOST": mp.SMTPHost, "SMTP_PORT": strconv.Itoa(mp.SMTPPort), "SMTP_FROM": "docflow@example.com",
		"SMTP_USERNAME": "docflow", "SMTP_PASSWORD": "pw"}
	n := New(st, zerolog.Nop())
	n.Mailer = smtp.New(st)
	rep := n.Notify(context.Background(), docflow.Notification{Title: "Zahlungsproblem für Ann", Body: "card expired"})
	if rep.Status != docflow.NotifySuccess {
		t.Fatalf("report: %+v", rep)
	}
	for _, to := range []string{"ops@example.com", "audit@example.org"} {
		subject, text := mp.WaitFor(t, to, 1, 10*time.Second)
		if subject != "Zahlungsproblem für Ann" || !strings.Contains(text, "card expired") {
			t.Errorf("%s: %q %q", to, subject, text)
		}
	}
}
