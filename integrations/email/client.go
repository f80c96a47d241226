package email

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/mail"
	"strconv"
	"strings"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Client delivers to one EMAIL destination. It keeps no connection
// between calls: each delivery is one SMTP session (mail servers close
// idle sessions within minutes).
type Client struct {
	cfg Config
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// New returns the client of an EMAIL integration: its own server is
// dialled through dial, the SMTP settings' server (read from settings at
// each delivery) as the operator's. Its error is a DestInvalid
// DestinationError when the config or the credentials cannot work.
func New(in *docflow.Integration, dial netguard.Dialer, settings docflow.SettingsStore) (docflow.DestinationClient, error) {
	cfg, err := ParseConfig(in, dial, settings)
	if err != nil {
		return nil, err
	}
	return NewClient(cfg), nil
}

// NewClient returns the client of cfg.
func NewClient(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Client{cfg: cfg}
}

// Connect checks that a server and a sender are configured; the SMTP
// session opens with each delivery.
func (c *Client) Connect(context.Context) error {
	_, err := c.cfg.server()
	return err
}

// Close does nothing: no session outlives a call.
func (c *Client) Close(context.Context) error { return nil }

// Location implements docflow.DestinationLocation.
func (c *Client) Location() string { return "e-mail to " + strings.Join(c.cfg.To, ", ") }

// Deliver sends one e-mail to the recipients with the document attached,
// streamed from body. A body that fails or ends before doc.Size bytes
// aborts the session before the message is complete, so nothing is sent.
// It returns "mailto:" and the recipients.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := upload.CheckName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	srv, err := c.cfg.server()
	if err != nil {
		return "", err
	}
	err = c.session(ctx, srv, func(sc *smtp.Client, conn *upload.Conn) error {
		if ok, p := sc.Extension("SIZE"); ok {
			if max, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64); err == nil && max > 0 && encodedSize(doc.Size) > max {
				return docflow.DestFail(docflow.DestInvalid, fmt.Sprintf(
					"the document (%s) is larger than the mail server takes (%s with its encoding)",
					humanSize(doc.Size), humanSize(max)), nil)
			}
		}
		if err := c.envelope(sc, srv); err != nil {
			return err
		}
		w, err := sc.Data()
		if err != nil {
			return err
		}
		src := &sourceReader{ctx: ctx, r: body}
		err = newMessage(srv.From, c.cfg.To, c.cfg.Subject, c.cfg.IntegrationID, doc).write(w, src)
		switch {
		case src.err != nil:
			err = &sourceError{src.err}
		case err == nil && doc.Size > 0 && src.n != doc.Size:
			err = &sourceError{fmt.Errorf("the document ended after %d of %d bytes", src.n, doc.Size)}
		}
		if err != nil {
			// Without the final ".", the server drops the message.
			conn.Close()
			return err
		}
		// A server may check a large message before it answers the final
		// "." (RFC 5321, 4.5.3.2.6: wait up to 10 minutes).
		conn.SetIdle(DataEndTimeout)
		return w.Close()
	})
	if err != nil {
		return "", err
	}
	return "mailto:" + strings.Join(c.cfg.To, ","), nil
}

// Probe logs in and has the server accept the sender and every
// recipient, then resets the transaction: no mail is sent.
func (c *Client) Probe(ctx context.Context) error {
	srv, err := c.cfg.server()
	if err != nil {
		return err
	}
	return c.session(ctx, srv, func(sc *smtp.Client, _ *upload.Conn) error {
		if err := c.envelope(sc, srv); err != nil {
			return err
		}
		return sc.Reset()
	})
}

func (c *Client) envelope(sc *smtp.Client, srv *Server) error {
	if err := sc.Mail((&mail.Address{Address: srv.From.Address}).String()); err != nil {
		return &commandError{"MAIL FROM", err}
	}
	for _, to := range c.cfg.To {
		if err := sc.Rcpt((&mail.Address{Address: to}).String()); err != nil {
			return &commandError{"RCPT TO " + to, err}
		}
	}
	return nil
}

// session opens an SMTP session to srv (TLS, login), runs op and quits;
// ctx's end cuts the connection. Its errors are DestinationErrors.
func (c *Client) session(ctx context.Context, srv *Server, op func(*smtp.Client, *upload.Conn) error) error {
	var conn *upload.Conn
	var stops []func() bool
	defer func() {
		for _, s := range stops {
			s()
		}
	}()
	dialer := c.cfg.Dialer
	if srv.Operator {
		dialer = netguard.Dialer{AllowPrivate: true, Timeout: c.cfg.Dialer.Timeout}
	}
	implicit := c.cfg.ImplicitTLS
	if implicit == 0 {
		implicit = ImplicitTLSPort
	}
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dialer.DialContext(dctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn = upload.Wrap(raw, c.cfg.Idle)
		stops = append(stops, conn.Bind(ctx))
		if srv.Port != implicit {
			return conn, nil
		}
		// TLS from the first byte. go-mail's own implicit TLS does not
		// apply to a dial function of ours; the *tls.Conn handed back is
		// what it recognises as encrypted.
		tc := tls.Client(conn, srv.TLS)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			return nil, err
		}
		return tc, nil
	}
	opts := []gomail.Option{
		gomail.WithPort(srv.Port),
		gomail.WithTimeout(c.cfg.Timeout),
		gomail.WithTLSConfig(srv.TLS),
		gomail.WithHELO(defaultHeloName),
		gomail.WithDialContextFunc(dial),
		gomail.WithTLSPolicy(c.tlsPolicy(srv)),
	}
	if srv.Username != "" {
		// AutoDiscover takes the strongest mechanism offered and sends no
		// password in the clear; to a server on this machine PLAIN is
		// allowed without TLS (nothing crosses a network).
		mech := gomail.SMTPAuthAutoDiscover
		if loopback(srv.Host) {
			mech = gomail.SMTPAuthPlain
		}
		opts = append(opts, gomail.WithSMTPAuth(mech), gomail.WithUsername(srv.Username), gomail.WithPassword(srv.Password))
	}
	gc, err := gomail.NewClient(srv.Host, opts...)
	if err != nil {
		return docflow.DestFail(docflow.DestInvalid, "the mail server's settings are not usable", err)
	}
	sc, err := gc.DialToSMTPClientWithContext(ctx)
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return classify(ctx, &sessionError{err})
	}
	err = op(sc, conn)
	if err == nil {
		sc.Quit() //nolint:errcheck // the message is accepted; a failed QUIT changes nothing
	}
	conn.Close()
	return classify(ctx, err)
}

// tlsPolicy: the operator's server uses STARTTLS when offered (the
// operator chose it); the integration's own must offer TLS, unless it is
// on this machine or the allow-list admits it as an intranet server.
func (c *Client) tlsPolicy(srv *Server) gomail.TLSPolicy {
	if srv.Operator || loopback(srv.Host) ||
		(c.cfg.Dialer.Allowed != nil && netguard.HostAllowed(c.cfg.Dialer.Allowed(), srv.Host, srv.Port)) {
		return gomail.TLSOpportunistic
	}
	return gomail.TLSMandatory
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sourceReader counts the document's bytes, remembers its reader's own
// error (no failure of the server) and stops reading when ctx ends.
type sourceReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.r.Read(p)
	s.n += int64(n)
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err
	}
	return n, err
}

type sourceError struct{ err error }

func (e *sourceError) Error() string { return "read the document: " + e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// sessionError is a failure to open the session: connect, greet, TLS or
// log in.
type sessionError struct{ err error }

func (e *sessionError) Error() string { return "open the SMTP session: " + e.err.Error() }
func (e *sessionError) Unwrap() error { return e.err }

// commandError is a refused envelope command.
type commandError struct {
	cmd string
	err error
}

func (e *commandError) Error() string { return e.cmd + ": " + e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }
