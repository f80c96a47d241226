// Package email is the EMAIL destination: each document is sent as the
// attachment of one e-mail to the integration's recipients (config.to),
// with a subject made from config.subject's placeholders. The mail goes
// through the integration's own SMTP server (credentials smtp_host,
// smtp_port, smtp_username, smtp_password) or, without one, through the
// server of the SMTP settings. The SMTP session is github.com/wneessen/go-mail's
// (STARTTLS, authentication); the message is written here, as it is
// sent, so the attachment is streamed from the document and never held
// in memory.
//
// An e-mail cannot be taken back or replaced: a document delivered twice
// is mailed twice. The delivery engine records each destination's
// success and does not send a document to a destination again once it
// succeeded; the Message-ID is the same for every sending of one document
// to one integration, so mail clients that keep one message per
// Message-ID show a repeated sending once.
package email

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Defaults.
const (
	DefaultPort     = 587
	ImplicitTLSPort = 465
	DefaultSubject  = "{title}"
	DefaultTimeout  = 30 * time.Second
	// DataEndTimeout bounds the wait for the server's answer to a
	// message's end (RFC 5321, 4.5.3.2.6).
	DataEndTimeout  = 10 * time.Minute
	maxSubjectRunes = 250
	defaultHeloName = "localhost"
)

// Server is the SMTP server a delivery goes through.
type Server struct {
	Host string
	Port int
	// Username and Password, when Username is set, log in.
	Username, Password string
	// From is the sender.
	From mail.Address
	// Operator: the server of the SMTP settings, which the operator
	// chose (it may be private; STARTTLS when offered). Otherwise the
	// integration's own, which must offer TLS unless the allow-list
	// admits it as an intranet server.
	Operator bool
	// TLS verifies the server's certificate.
	TLS *tls.Config
}

// Config is one EMAIL destination.
type Config struct {
	IntegrationID int64
	To            []string
	// Subject is config.subject, a template with the filename
	// placeholders.
	Subject string
	// own is the integration's own server, or nil for the settings'.
	own *Server
	// Settings gives the SMTP settings, read at each delivery.
	Settings docflow.SettingsStore
	// Dialer connects to the integration's own server; the settings'
	// server is dialled with AllowPrivate.
	Dialer netguard.Dialer
	// Timeout bounds the dial, and the handshake of TLS from the start
	// (DefaultTimeout).
	Timeout time.Duration
	// Idle bounds each read and write (upload.DefaultIdle when 0).
	Idle time.Duration
	// ImplicitTLS is the port that speaks TLS from the start
	// (ImplicitTLSPort when 0).
	ImplicitTLS int
}

// ParseConfig reads an EMAIL integration's config and credentials. Its
// errors are DestInvalid: the integration must change before a delivery
// can work.
func ParseConfig(in *docflow.Integration, dial netguard.Dialer, settings docflow.SettingsStore) (Config, error) {
	c := Config{IntegrationID: in.ID, Settings: settings, Dialer: dial, Timeout: DefaultTimeout}
	for _, a := range strings.Split(upload.String(in.Config, "to"), ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if docflow.CheckEmail(a) != nil {
			return c, invalid("config.to: " + strconv.Quote(a) + " is not an e-mail address")
		}
		c.To = append(c.To, a)
	}
	if len(c.To) == 0 {
		return c, invalid("config.to needs at least one e-mail address")
	}
	c.Subject = DefaultSubject
	if v, ok := in.Config["subject"].(string); ok && strings.TrimSpace(v) != "" {
		c.Subject = v
	}
	host := strings.TrimSpace(in.Credentials["smtp_host"])
	if host == "" {
		return c, nil
	}
	s := &Server{Host: host, Port: DefaultPort, Username: in.Credentials["smtp_username"],
		Password: in.Credentials["smtp_password"]}
	if p := strings.TrimSpace(in.Credentials["smtp_port"]); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return c, invalid("credentials.smtp_port must be 1–65535")
		}
		s.Port = n
	}
	s.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if pem := upload.String(in.Config, "ca_certificate"); pem != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(pem)) {
			return c, invalid("config.ca_certificate holds no PEM certificate")
		}
		s.TLS.RootCAs = pool
	}
	c.own = s
	return c, nil
}

// server is the server of the next delivery, with its sender: the
// integration's own (its sender smtp_username when that is an address,
// else SMTP_FROM), or the SMTP settings' server.
func (c Config) server() (*Server, error) {
	settingsFrom := func() (mail.Address, bool) {
		if c.Settings == nil {
			return mail.Address{}, false
		}
		a, err := mail.ParseAddress(strings.TrimSpace(docflow.SMTPFrom.Get(c.Settings)))
		if err != nil || docflow.CheckEmail(a.Address) != nil || strings.ContainsAny(a.Name, "\r\n") {
			return mail.Address{}, false
		}
		return *a, true
	}
	if c.own != nil {
		s := *c.own
		if docflow.CheckEmail(s.Username) == nil {
			s.From = mail.Address{Address: s.Username}
		} else if from, ok := settingsFrom(); ok {
			s.From = from
		} else {
			return nil, invalid("no sender address: give credentials.smtp_username as an e-mail address, " +
				"or ask the administrator to set SMTP_FROM")
		}
		return &s, nil
	}
	if c.Settings == nil || strings.TrimSpace(docflow.SMTPHost.Get(c.Settings)) == "" {
		return nil, invalid("e-mail is not configured: give credentials.smtp_host, " +
			"or ask the administrator to set SMTP_HOST and SMTP_FROM")
	}
	from, ok := settingsFrom()
	if !ok {
		return nil, invalid("SMTP_FROM is not set to an e-mail address: ask the administrator to set it")
	}
	host := strings.TrimSpace(docflow.SMTPHost.Get(c.Settings))
	return &Server{
		Host: host, Port: docflow.SMTPPort.Get(c.Settings),
		Username: docflow.SMTPUsername.Get(c.Settings), Password: docflow.SMTPPassword.Get(c.Settings),
		From: from, Operator: true,
		TLS: &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12},
	}, nil
}

func (s *Server) addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

func invalid(reason string) error {
	return docflow.DestFail(docflow.DestInvalid, reason, nil)
}
