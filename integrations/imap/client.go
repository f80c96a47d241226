package imap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"docflow/internal/netguard"
)

// Client is one IMAP source's connection (an actors.Connector). It is not
// safe for concurrent use, except that News may fire at any time.
type Client struct {
	cfg Config
	// news, optional, hears that the folder may hold new mail (EXISTS while
	// idling) or that the connection closed; it is called on the client's
	// reader goroutine and must not block.
	news func()

	conn        *deadlineConn
	c           *imapclient.Client
	idle        *imapclient.IdleCommand
	uidValidity uint32
	closing     atomic.Bool
}

// New returns an unconnected client for cfg; news may be nil.
func New(cfg Config, news func()) (*Client, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if news == nil {
		news = func() {}
	}
	return &Client{cfg: cfg, news: news}, nil
}

// Config is the client's configuration.
func (k *Client) Config() Config { return k.cfg }

// Connect dials the server, secures the connection as configured, logs in
// and selects the folder. A refused login or an unknown folder is returned
// with the server's reason; network failures wrap ErrConnection.
func (k *Client) Connect(ctx context.Context) error {
	if k.c != nil {
		return nil
	}
	addr := net.JoinHostPort(k.cfg.Host, strconv.Itoa(k.cfg.Port))
	dial := k.cfg.Dial
	if dial == nil {
		d := netguard.Dialer{Timeout: k.cfg.DialTimeout, KeepAlive: k.cfg.IOTimeout}
		dial = d.DialContext
	}
	dctx, cancel := context.WithTimeout(ctx, k.cfg.DialTimeout)
	raw, err := dial(dctx, "tcp", addr)
	cancel()
	if err != nil {
		return connErr(fmt.Errorf("dial %s: %w", addr, err))
	}
	conn := &deadlineConn{Conn: raw, timeout: k.cfg.IOTimeout}
	stop := context.AfterFunc(ctx, conn.abort)
	defer stop()
	k.closing.Store(false)
	opts := &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
		Mailbox: func(d *imapclient.UnilateralDataMailbox) {
			if d.NumMessages != nil {
				k.news()
			}
		},
	}}
	var c *imapclient.Client
	switch k.cfg.Security {
	case SecurityTLS:
		tc, err := k.cfg.tlsConfig()
		if err != nil {
			raw.Close()
			return err
		}
		tc.NextProtos = []string{"imap"}
		tlsConn := tls.Client(conn, tc)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return connErr(fmt.Errorf("tls handshake with %s: %w", addr, certErr(err)))
		}
		c = imapclient.New(tlsConn, opts)
	case SecurityStartTLS:
		tc, err := k.cfg.tlsConfig()
		if err != nil {
			raw.Close()
			return err
		}
		opts.TLSConfig = tc
		if c, err = imapclient.NewStartTLS(conn, opts); err != nil {
			raw.Close()
			var ie *imap.Error
			if errors.As(err, &ie) {
				// Never a fall back to plain text: the login is not sent.
				return &netguard.Failure{Class: FailStartTLS, Err: fmt.Errorf("starttls with %s: %w", addr, err)}
			}
			return connErr(fmt.Errorf("starttls with %s: %w", addr, certErr(err)))
		}
	default:
		c = imapclient.New(conn, opts)
	}
	// The greeting first: a server that is not speaking IMAP is told from
	// a broken connection before any login is sent (the client reports
	// both as one flattened error, so the connection's own read error
	// decides).
	if err := c.WaitGreeting(); err != nil {
		c.Close()
		var ie *imap.Error
		switch rerr := conn.firstReadErr(); {
		case rerr != nil || ctx.Err() != nil:
			return connErr(fmt.Errorf("greeting from %s: %w", addr, errors.Join(rerr, ctx.Err())))
		case errors.As(err, &ie):
			// BYE as a greeting: an IMAP server refusing connections for
			// now (too many, shutting down): tried again later.
			return connErr(fmt.Errorf("greeting from %s: %w", addr, err))
		case strings.Contains(err.Error(), "connection closed before greeting"):
			return connErr(fmt.Errorf("greeting from %s: %w", addr, io.ErrUnexpectedEOF))
		}
		return &netguard.Failure{Class: netguard.FailProtocol, Err: fmt.Errorf("greeting from %s: %w", addr, err)}
	}
	// fail sorts a failed command: the connection's failures wrap
	// ErrConnection; the server's refusal is the class given; anything
	// else is an answer the client did not understand (not an IMAP
	// server, or a broken one).
	fail := func(class string, err error) error {
		c.Close()
		var ie *imap.Error
		switch {
		case isNetErr(err) || ctx.Err() != nil:
			return connErr(err)
		case errors.As(err, &ie):
			return &netguard.Failure{Class: class, Err: err}
		}
		return &netguard.Failure{Class: netguard.FailProtocol, Err: err}
	}
	if err := c.Login(k.cfg.Username, k.cfg.Password).Wait(); err != nil {
		return fail(FailLogin, fmt.Errorf("login refused: %w", err))
	}
	sel, err := c.Select(k.cfg.Folder, &imap.SelectOptions{}).Wait()
	if err != nil {
		return fail(fmt.Sprintf("could not open folder %q", k.cfg.Folder), fmt.Errorf("select folder %q: %w", k.cfg.Folder, err))
	}
	k.conn, k.c, k.uidValidity = conn, c, sel.UIDValidity
	// A connection the server closes wakes the owner, whose next command
	// then fails and reconnects.
	go func() {
		<-c.Closed()
		if !k.closing.Load() {
			k.news()
		}
	}()
	return nil
}

// Connected reports whether the client holds an open connection.
func (k *Client) Connected() bool {
	if k.c == nil {
		return false
	}
	select {
	case <-k.c.Closed():
		return false
	default:
		return true
	}
}

// CanIdle reports whether the server offers IDLE.
func (k *Client) CanIdle() bool {
	return k.c != nil && (k.c.Caps().Has(imap.CapIdle) || k.c.Caps().Has(imap.CapIMAP4rev2))
}

// Idle starts waiting for new mail with IDLE (when offered; else it does
// nothing): the server's EXISTS calls news. Any other command stops it
// first.
func (k *Client) Idle(ctx context.Context) error {
	if k.c == nil {
		return connErr(errors.New("not connected"))
	}
	if k.idle != nil || !k.CanIdle() {
		return nil
	}
	stop := context.AfterFunc(ctx, k.conn.abort)
	defer stop()
	cmd, err := k.c.Idle()
	if err != nil {
		return k.cmdErr("IDLE", err)
	}
	k.idle = cmd
	k.conn.setIdle(true)
	return nil
}

// stopIdle ends IDLE, if running.
func (k *Client) stopIdle() error {
	if k.idle == nil {
		return nil
	}
	cmd := k.idle
	k.idle = nil
	k.conn.setIdle(false)
	if err := cmd.Close(); err != nil {
		return connErr(err)
	}
	if err := cmd.Wait(); err != nil {
		return k.cmdErr("IDLE", err)
	}
	return nil
}

// Close logs out (bounded by ctx and the I/O timeout) and closes the
// connection.
func (k *Client) Close(ctx context.Context) error {
	if k.c == nil {
		return nil
	}
	k.closing.Store(true)
	c, conn := k.c, k.conn
	k.c, k.conn = nil, nil
	stop := context.AfterFunc(ctx, conn.abort)
	defer stop()
	if k.idle != nil {
		conn.setIdle(false)
		k.idle.Close() //nolint:errcheck
		k.idle = nil
	}
	err := c.Logout().Wait()
	if cerr := c.Close(); err == nil && cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = cerr
	}
	return err
}

// cmdErr classifies the error of the command op: the connection's
// failures wrap ErrConnection; the server's NO and BAD answers are the
// server refusing op (its text kept for the log only).
func (k *Client) cmdErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var ie *imap.Error
	if errors.As(err, &ie) {
		return refused(op, err)
	}
	return connErr(fmt.Errorf("%s: %w", op, err))
}

// certErr says in plain words that the server's certificate failed
// verification, and what to do about it; other errors pass unchanged.
func certErr(err error) error {
	var ve *tls.CertificateVerificationError
	if !errors.As(err, &ve) {
		return err
	}
	var hostErr x509.HostnameError
	if errors.As(err, &hostErr) {
		return &netguard.Failure{Class: FailWrongHost, Err: err}
	}
	return &netguard.Failure{Class: FailUntrusted, Err: err}
}
