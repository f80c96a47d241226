package docflow

import "context"

// Mail is one plain-text message. Addresses are bare e-mail addresses;
// senders refuse anything else (no header injection through them).
type Mail struct {
	To      []string
	Subject string
	Text    string
}

// Mailer sends mail (integrations/smtp through SMTP_HOST…). Send returns
// EUNAVAILABLE when no mail server is configured.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}
