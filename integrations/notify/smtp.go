package notify

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/integrations/netguard"
)

// SMTPMailer is a minimal mailer over the SMTP settings (SMTP_HOST,
// SMTP_PORT, SMTP_USERNAME, SMTP_PASSWORD, SMTP_FROM), read at each mail:
// implicit TLS on port 465, STARTTLS whenever the server offers it
// (required before a password is sent, except to a loopback server), and
// the connection made through the private-address guard (the host must
// be in WEBHOOK_ALLOWED_HOSTS when it is internal). The application's own
// mailer can replace it through Notifier.Mailer.
type SMTPMailer struct {
	Settings docflow.SettingsService
	Dialer   netguard.Dialer
	// TLSConfig overrides the TLS configuration (tests trust their own
	// certificate with it).
	TLSConfig *tls.Config
}

// SendMail sends one plain-text mail to every address of to.
func (m *SMTPMailer) SendMail(ctx context.Context, to []string, subject, body string) error {
	host := strings.TrimSpace(m.Settings.Get("SMTP_HOST"))
	from := strings.TrimSpace(m.Settings.Get("SMTP_FROM"))
	if host == "" || from == "" {
		return errors.New("SMTP_HOST and SMTP_FROM must be set to send mail")
	}
	port := docflow.SettingInt(m.Settings, "SMTP_PORT", 587)
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	conn, err := m.Dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("connect to the SMTP server: %w", err)
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	tlsConf := m.TLSConfig
	if tlsConf == nil {
		tlsConf = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	if port == 465 {
		conn = tls.Client(conn, tlsConf)
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return fmt.Errorf("SMTP greeting: %w", err)
	}
	defer c.Close()
	if err := c.Hello("docflow"); err != nil {
		return fmt.Errorf("SMTP hello: %w", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok && port != 465 {
		if err := c.StartTLS(tlsConf); err != nil {
			return fmt.Errorf("SMTP STARTTLS: %w", err)
		}
	}
	if user := m.Settings.Get("SMTP_USERNAME"); user != "" {
		// PlainAuth refuses to send the password over a connection that
		// is neither TLS nor to localhost.
		if err := c.Auth(smtp.PlainAuth("", user, m.Settings.Get("SMTP_PASSWORD"), host)); err != nil {
			return fmt.Errorf("SMTP authentication: %w", err)
		}
	}
	if err := c.Mail(from); err != nil {
		return fmt.Errorf("SMTP sender: %w", err)
	}
	for _, r := range to {
		if err := c.Rcpt(r); err != nil {
			return fmt.Errorf("SMTP recipient %s: %w", r, err)
		}
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("SMTP data: %w", err)
	}
	if _, err := w.Write(message(from, to, subject, body)); err != nil {
		return fmt.Errorf("SMTP data: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("SMTP data: %w", err)
	}
	return c.Quit()
}

// message is the RFC 5322 text of a plain-text UTF-8 mail.
func message(from string, to []string, subject, body string) []byte {
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	domain := "docflow"
	if a, err := mail.ParseAddress(from); err == nil {
		if _, d, ok := strings.Cut(a.Address, "@"); ok {
			domain = d
		}
	}
	var b strings.Builder
	b.WriteString("From: " + from + "\r\n")
	b.WriteString("To: " + strings.Join(to, ", ") + "\r\n")
	b.WriteString("Subject: " + mime.QEncoding.Encode("utf-8", strings.NewReplacer("\r", " ", "\n", " ").Replace(subject)) + "\r\n")
	b.WriteString("Date: " + time.Now().UTC().Format(time.RFC1123Z) + "\r\n")
	b.WriteString("Message-ID: <" + hex.EncodeToString(id) + "@" + domain + ">\r\n")
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	b.WriteString(strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n"))
	b.WriteString("\r\n")
	return []byte(b.String())
}
