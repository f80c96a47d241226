package smtp_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/smtp"
	"docflow/internal/testsupport/mailpit"
)

// TestSendToMailpit delivers through a real SMTP server, with
// authentication, and reads the message back from its API.
func TestSendToMailpit(t *testing.T) {
	mp := mailpit.Start(t)
	m := smtp.New(mapSettings{"SMTP_HOST": mp.SMTPHost, "SMTP_PORT": strconv.Itoa(mp.SMTPPort),
		"SMTP_USERNAME": "docflow", "SMTP_PASSWORD": "secret", "SMTP_FROM": "docflow <noreply@example.com>"})
	if err := m.Send(context.Background(), docflow.Mail{To: []string{"ann@example.com"}, Subject: "Grüße", Text: "Hello Ann\n"}); err != nil {
		t.Fatal(err)
	}
	subject, text := mp.WaitFor(t, "ann@example.com", 1, 10*time.Second)
	if subject != "Grüße" || !strings.Contains(text, "Hello Ann") {
		t.Fatalf("%q %q", subject, text)
	}
}
