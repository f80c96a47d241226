package ftp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strings"

	"github.com/jlaffaye/ftp"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Client delivers to one FTP destination. It holds one control
// connection between calls and opens it again after a failure; its calls
// must not overlap (the integration's actor owns it).
type Client struct {
	cfg  Config
	tls  *tls.Config
	ctrl *upload.Conn
	sc   *ftp.ServerConn
	// folder is cfg.Folder made absolute against the login folder.
	folder string
	// op is the context of the call in progress: data connections are
	// dialled and cut with it.
	op    context.Context
	stops []func() bool
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// New returns the client of an FTP integration, connecting through dial.
// Its error is a DestInvalid DestinationError when the config or the
// credentials cannot work. Nothing is dialled until Connect.
func New(in *docflow.Integration, dial netguard.Dialer) (docflow.DestinationClient, error) {
	cfg, err := ParseConfig(in, dial)
	if err != nil {
		return nil, err
	}
	return NewClient(cfg)
}

// NewClient returns the client of cfg.
func NewClient(cfg Config) (*Client, error) {
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, tls: tc, op: context.Background()}, nil
}

// Connect dials the server, upgrades the connection to TLS (unless tls:
// none), logs in and finds the login folder; nothing when already
// connected.
func (c *Client) Connect(ctx context.Context) error {
	if c.sc != nil {
		return nil
	}
	return c.classify(ctx, c.connect(ctx))
}

func (c *Client) connect(ctx context.Context) error {
	raw, err := c.cfg.Dialer.DialContext(ctx, "tcp", c.cfg.addr())
	if err != nil {
		return err
	}
	ctrl := upload.Wrap(raw, c.cfg.Idle)
	stop := ctrl.Bind(ctx)
	defer stop()
	c.op = ctx
	defer func() { c.op = context.Background() }()
	// Data connections go to the control connection's address alone,
	// through the guard with that one address admitted: the address was
	// checked when the control connection was made.
	ctrlIP := raw.RemoteAddr().(*net.TCPAddr).IP.String()
	data := c.cfg.Dialer
	data.Allowed = func() []string { return []string{ctrlIP} }
	first := true
	dialFunc := func(network, addr string) (net.Conn, error) {
		if first {
			first = false
			return ctrl, nil
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host != ctrlIP {
			return nil, fmt.Errorf("data connection to %q refused: not the control connection's address", addr)
		}
		conn, err := data.DialContext(c.op, network, net.JoinHostPort(ctrlIP, port))
		if err != nil {
			return nil, err
		}
		w := upload.Wrap(conn, c.cfg.Idle).Drain()
		c.stops = append(c.stops, w.Bind(c.op))
		if c.tls != nil {
			return tls.Client(w, c.tls), nil
		}
		return w, nil
	}
	opts := []ftp.DialOption{ftp.DialWithDialFunc(dialFunc)}
	if c.tls != nil {
		opts = append(opts, ftp.DialWithExplicitTLS(c.tls))
	}
	sc, err := ftp.Dial(c.cfg.addr(), opts...)
	if err != nil {
		ctrl.Close()
		if c.tls != nil && isReply(err) {
			return &tlsRefused{err}
		}
		return err
	}
	if err := sc.Login(c.cfg.Username, c.cfg.Password); err != nil {
		sc.Quit() //nolint:errcheck // the login's error is the one to report
		return &loginError{err}
	}
	folder := c.cfg.Folder
	if !path.IsAbs(folder) {
		pwd, err := sc.CurrentDir()
		if err != nil {
			sc.Quit() //nolint:errcheck
			return err
		}
		folder = path.Join(pwd, folder)
	}
	c.ctrl, c.sc, c.folder = ctrl, sc, folder
	return nil
}

// Close ends the session (QUIT) and closes the connection.
func (c *Client) Close(context.Context) error {
	if c.sc == nil {
		return nil
	}
	c.sc.Quit() //nolint:errcheck // a dead connection needs no QUIT
	c.ctrl, c.sc = nil, nil
	return nil
}

// Deliver streams body to a temporary name in the folder (created when
// missing), then renames it over doc.Name, replacing an earlier delivery.
// It returns the file's path on the server. A body shorter than doc.Size
// is not stored. After a failure of the connection the client is closed,
// so the next call connects again.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := upload.CheckName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	var target string
	err := c.run(ctx, func() error {
		if err := c.mkdirs(); err != nil {
			return err
		}
		target = path.Join(c.folder, doc.Name)
		return c.store(ctx, target, body, doc.Size)
	})
	if err != nil {
		return "", err
	}
	return target, nil
}

// Probe connects, logs in, creates the folder when missing, and writes
// and removes a small file there.
func (c *Client) Probe(ctx context.Context) error {
	return c.run(ctx, func() error {
		if err := c.mkdirs(); err != nil {
			return err
		}
		name := path.Join(c.folder, upload.ProbeName())
		if err := c.sc.Stor(name, strings.NewReader("docflow destination test\n")); err != nil {
			c.sc.Delete(name) //nolint:errcheck // the store's error is the one to report
			return err
		}
		return c.sc.Delete(name)
	})
}

// run connects, runs op with the connections cut when ctx ends, and
// classes its error; a connection that failed is closed.
func (c *Client) run(ctx context.Context, op func() error) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	stop := c.ctrl.Bind(ctx)
	c.op = ctx
	err := op()
	stop()
	for _, s := range c.stops {
		s()
	}
	c.op, c.stops = context.Background(), nil
	if err == nil {
		return nil
	}
	de := c.classify(ctx, err)
	if docflow.DestinationFailureOf(de) == docflow.DestUnavailable || c.ctrl.Aborted() != nil {
		c.Close(ctx) //nolint:errcheck // the connection is given up
	}
	return de
}

// mkdirs makes the folder and its missing parents.
func (c *Client) mkdirs() error {
	if c.folder == "/" || c.isDir(c.folder) {
		return nil
	}
	parts := strings.Split(strings.Trim(c.folder, "/"), "/")
	dir := "/"
	for _, p := range parts {
		dir = path.Join(dir, p)
		if err := c.sc.MakeDir(dir); err != nil && !c.isDir(dir) {
			return err
		}
	}
	return nil
}

// isDir reports whether dir is a folder the account can enter. It leaves
// the working folder at dir; paths are absolute, so that is harmless.
func (c *Client) isDir(dir string) bool {
	return c.sc.ChangeDir(dir) == nil
}

// store uploads body under a temporary name beside target, then renames
// it over target. The temporary file is removed when anything fails.
func (c *Client) store(ctx context.Context, target string, body io.Reader, size int64) error {
	tmp := path.Join(c.folder, upload.TempName())
	src := &sourceReader{ctx: ctx, r: body}
	err := c.sc.Stor(tmp, src)
	switch {
	case src.err != nil:
		err = &sourceError{src.err}
	case err == nil && size > 0 && src.n != size:
		err = &sourceError{fmt.Errorf("the document ended after %d of %d bytes", src.n, size)}
	}
	if err == nil {
		err = c.replace(tmp, target)
	}
	if err != nil && c.ctrl.Aborted() == nil {
		c.sc.Delete(tmp) //nolint:errcheck // best effort; the first error is the one to report
	}
	return err
}

// replace renames tmp over target. Servers on Unix replace the target in
// one step; a server that refuses to rename over an existing file gets
// the target deleted first.
func (c *Client) replace(tmp, target string) error {
	err := c.sc.Rename(tmp, target)
	if err == nil || replyCode(err) != ftp.StatusFileUnavailable {
		return err
	}
	if derr := c.sc.Delete(target); derr != nil {
		return err
	}
	return c.sc.Rename(tmp, target)
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

// Location implements docflow.DestinationLocation.
func (c *Client) Location() string { return upload.Location("ftp", c.cfg.addr(), c.cfg.Folder) }
