// Package smtp sends docflow's mail (password resets, and later the EMAIL
// destination and admin notifications) through the SMTP server of the
// SMTP_HOST, SMTP_PORT, SMTP_USERNAME, SMTP_PASSWORD and SMTP_FROM
// settings, with github.com/wneessen/go-mail.
//
// Security: STARTTLS is used whenever the server offers it (port 465
// speaks TLS from the start); the connection (made by internal/netguard,
// the server being the operator's and so allowed on a private address)
// and every SMTP command have a deadline; addresses are checked before anything is sent and the subject
// is MIME-encoded, so no header can be injected through them. Credentials
// are never logged.
package smtp

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"docflow"
	"docflow/internal/netguard"
)

// DefaultTimeout bounds the dial and each SMTP command.
const DefaultTimeout = 20 * time.Second

// Mailer implements docflow.Mailer with the SMTP settings, read at each
// Send so a change applies to the next mail.
type Mailer struct {
	settings docflow.SettingsStore
	// Timeout bounds the dial and each command (default DefaultTimeout).
	Timeout time.Duration
	// TLSConfig verifies the server's certificate for STARTTLS (nil: the
	// system roots and SMTP_HOST as the name). Tests set their own CA.
	TLSConfig *tls.Config
	// HeloName is the name given in EHLO (default "localhost").
	HeloName string
	// Recorder, when set, hears one integration metric per mail that
	// reached the sending stage (type smtp, direction out, target
	// SMTP_HOST, the message's size, outcome and duration).
	Recorder docflow.Recorder
	// implicitTLS is the port that speaks TLS from the start (0: 465);
	// tests move it to a port they can listen on.
	implicitTLS int
}

var _ docflow.Mailer = (*Mailer)(nil)

// New returns a Mailer reading the SMTP settings from settings.
func New(settings docflow.SettingsStore) *Mailer {
	if settings == nil {
		panic("smtp: New needs settings")
	}
	return &Mailer{settings: settings, Timeout: DefaultTimeout}
}

// Configured reports whether SMTP_HOST and SMTP_FROM are set.
func (m *Mailer) Configured() bool {
	return strings.TrimSpace(docflow.SMTPHost.Get(m.settings)) != "" && strings.TrimSpace(docflow.SMTPFrom.Get(m.settings)) != ""
}

// Send delivers msg; EUNAVAILABLE when SMTP is not configured, EINVALID
// for an address that is not one, EBADGATEWAY when the server refuses or
// cannot be reached.
func (m *Mailer) Send(ctx context.Context, msg docflow.Mail) error {
	if !m.Configured() {
		return docflow.Errorf(docflow.EUNAVAILABLE, "E-mail is not configured (SMTP_HOST and SMTP_FROM)")
	}
	if len(msg.To) == 0 {
		return docflow.Errorf(docflow.EINVALID, "no recipient")
	}
	for _, to := range msg.To {
		if err := docflow.CheckEmail(to); err != nil {
			return docflow.Errorf(docflow.EINVALID, "recipient %q is not an e-mail address", to)
		}
	}
	from, err := mail.ParseAddress(strings.TrimSpace(docflow.SMTPFrom.Get(m.settings)))
	if err != nil || docflow.CheckEmail(from.Address) != nil || strings.ContainsAny(from.Name, "\r\n") {
		return docflow.Errorf(docflow.EINVALID, "SMTP_FROM is not an e-mail address")
	}

	gm := gomail.NewMsg()
	if err := gm.FromFormat(from.Name, from.Address); err != nil {
		return docflow.Errorf(docflow.EINVALID, "SMTP_FROM is not an e-mail address")
	}
	if err := gm.To(msg.To...); err != nil {
		return docflow.Errorf(docflow.EINVALID, "recipient is not an e-mail address")
	}
	gm.Subject(oneLine(msg.Subject))
	gm.SetDate()
	gm.SetMessageID()
	gm.SetBodyString(gomail.TypeTextPlain, msg.Text)

	start := time.Now()
	err = m.dialAndSend(ctx, gm)
	if m.Recorder != nil {
		m.Recorder.Record(docflow.IntegrationMetric(docflow.MetricTypeSMTP, docflow.DirectionOut,
			strings.TrimSpace(docflow.SMTPHost.Get(m.settings)), start, int64(len(msg.Subject)+len(msg.Text)), err))
	}
	return err
}

func (m *Mailer) dialAndSend(ctx context.Context, gm *gomail.Msg) error {
	c, err := m.client()
	if err != nil {
		return err
	}
	if err := c.DialAndSendWithContext(ctx, gm); err != nil {
		// NOTE: go-mail's errors name the server and the SMTP reply, never
		// the credentials.
		return fmt.Errorf("%w: %v", docflow.Errorf(docflow.EBADGATEWAY, "The mail server did not take the message"), err)
	}
	return nil
}

func (m *Mailer) client() (*gomail.Client, error) {
	host := strings.TrimSpace(docflow.SMTPHost.Get(m.settings))
	port := docflow.SMTPPort.Get(m.settings)
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	helo := m.HeloName
	if helo == "" {
		helo = "localhost"
	}
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if m.TLSConfig != nil {
		tc = m.TLSConfig.Clone()
		if tc.ServerName == "" {
			tc.ServerName = host
		}
	}
	// The server is the operator's, allowed on a private address; the
	// connection is still made by netguard, the one way out.
	dialer := netguard.Dialer{AllowPrivate: true, Timeout: timeout}
	dial := dialer.DialContext
	if port == m.implicitTLSPort() {
		// TLS from the first byte. NOTE: go-mail's WithSSL does not apply
		// to a dial function of our own, so the handshake is made here; the
		// *tls.Conn handed back is what go-mail recognises as encrypted
		// (and then never offers the password in the clear).
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, tc)
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return conn, nil
		}
	}
	opts := []gomail.Option{
		gomail.WithPort(port),
		gomail.WithTimeout(timeout),
		gomail.WithTLSConfig(tc),
		gomail.WithHELO(helo),
		gomail.WithDialContextFunc(dial),
		// STARTTLS when the server offers it; a server that offers it and
		// then fails the handshake is an error, not a plain-text fallback.
		gomail.WithTLSPolicy(gomail.TLSOpportunistic),
	}
	if user := docflow.SMTPUsername.Get(m.settings); user != "" {
		// AutoDiscover picks the strongest mechanism the server offers and
		// never sends a password in the clear over an unencrypted
		// connection; to a server on this machine PLAIN is allowed without
		// TLS (nothing crosses a network).
		mech := gomail.SMTPAuthAutoDiscover
		if loopback(host) {
			mech = gomail.SMTPAuthPlain
		}
		opts = append(opts, gomail.WithSMTPAuth(mech),
			gomail.WithUsername(user), gomail.WithPassword(docflow.SMTPPassword.Get(m.settings)))
	}
	c, err := gomail.NewClient(host, opts...)
	if err != nil {
		return nil, docflow.Errorf(docflow.EINVALID, "SMTP settings: %v", err)
	}
	return c, nil
}

func (m *Mailer) implicitTLSPort() int {
	if m.implicitTLS != 0 {
		return m.implicitTLS
	}
	return 465
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// oneLine keeps a header value on one line: control characters become
// spaces (go-mail then MIME-encodes anything outside ASCII).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
