package sftp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Client delivers to one SFTP destination. It holds one SSH connection
// between calls and opens it again after a failure; its calls must not
// overlap (the integration's actor owns it).
type Client struct {
	cfg  Config
	conn *upload.Conn
	ssh  *ssh.Client
	sftp *sftp.Client
	// algos are the host key algorithms that reached the pinned key last
	// time, offered first on the next connection.
	algos []string
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// New returns the client of an SFTP integration, connecting through dial.
// Its error is a DestInvalid DestinationError when the config or the
// credentials cannot work (no host, a bad fingerprint, a private key that
// does not parse). Nothing is dialled until Connect.
func New(in *docflow.Integration, dial netguard.Dialer) (docflow.DestinationClient, error) {
	cfg, err := ParseConfig(in, dial)
	if err != nil {
		return nil, err
	}
	return NewClient(cfg), nil
}

// NewClient returns the client of cfg.
func NewClient(cfg Config) *Client {
	if cfg.Dial == nil {
		panic("sftp: Config.Dial is required")
	}
	return &Client{cfg: cfg}
}

// Connect dials the server, checks its host key against the pinned
// fingerprint, logs in and opens the SFTP subsystem; nothing when already
// connected. A server showing another host key than the pinned one is
// asked for its other kinds of key (Ed25519, ECDSA, RSA) before it is
// refused as DestHostKey.
func (c *Client) Connect(ctx context.Context) error {
	if c.sftp != nil {
		return nil
	}
	keys := newHostKeys(c.cfg.Fingerprint)
	algos := c.algos
	for range len(keyFamilies) + 1 {
		if algos == nil {
			algos = keys.algorithms()
		}
		if len(algos) == 0 {
			return docflow.DestFail(docflow.DestHostKey, keys.reason(), errMismatch)
		}
		err := c.dial(ctx, keys, algos)
		if err == nil {
			c.algos = algos
			return nil
		}
		var neg *ssh.AlgorithmNegotiationError
		switch {
		case errors.Is(err, errMismatch):
			// The server showed a key of one kind: ask for the others.
			algos = nil
			continue
		case errors.As(err, &neg) && neg.What == "host key" && c.algos != nil && len(keys.seen) == 0:
			// The kind that matched last time is gone: try them all.
			c.algos, algos = nil, nil
			continue
		case errors.As(err, &neg) && neg.What == "host key" && len(keys.seen) > 0:
			return docflow.DestFail(docflow.DestHostKey, keys.reason(), err)
		}
		return classify(ctx, err)
	}
	return docflow.DestFail(docflow.DestHostKey, keys.reason(), errMismatch)
}

func (c *Client) dial(ctx context.Context, keys *hostKeys, algos []string) error {
	raw, err := c.cfg.Dial(ctx, "tcp", c.cfg.addr())
	if err != nil {
		return err
	}
	conn := upload.Wrap(raw, c.cfg.Idle)
	stop := conn.Bind(ctx)
	defer stop()
	config := &ssh.ClientConfig{
		User:              c.cfg.Username,
		Auth:              c.authMethods(),
		HostKeyCallback:   keys.check,
		HostKeyAlgorithms: algos,
	}
	sc, chans, reqs, err := ssh.NewClientConn(conn, c.cfg.addr(), config)
	if err != nil {
		conn.Close()
		return err
	}
	client := ssh.NewClient(sc, chans, reqs)
	fs, err := sftp.NewClient(client, sftp.UseConcurrentWrites(true))
	if err != nil {
		client.Close()
		return &subsystemError{err}
	}
	c.conn, c.ssh, c.sftp = conn, client, fs
	return nil
}

func (c *Client) authMethods() []ssh.AuthMethod {
	var out []ssh.AuthMethod
	if c.cfg.Signer != nil {
		out = append(out, ssh.PublicKeys(c.cfg.Signer))
	}
	if pw := c.cfg.Password; pw != "" {
		out = append(out, ssh.Password(pw),
			// Servers that ask for the password through
			// keyboard-interactive get it for each question asked.
			ssh.KeyboardInteractive(func(_, _ string, questions []string, _ []bool) ([]string, error) {
				answers := make([]string, len(questions))
				for i := range answers {
					answers[i] = pw
				}
				return answers, nil
			}))
	}
	return out
}

// Close closes the connection.
func (c *Client) Close(context.Context) error {
	if c.sftp == nil {
		return nil
	}
	err := errors.Join(c.sftp.Close(), c.ssh.Close())
	c.conn, c.ssh, c.sftp = nil, nil, nil
	if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
		// Already closed by the far side or a failed call.
		return nil
	}
	return err
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
	target := upload.Join(c.cfg.Folder, doc.Name)
	err := c.run(ctx, func() error {
		if err := c.mkdirs(); err != nil {
			return err
		}
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
		name := upload.Join(c.cfg.Folder, upload.ProbeName())
		f, err := c.sftp.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
		if err != nil {
			return err
		}
		_, werr := f.Write([]byte("docflow destination test\n"))
		if err := errors.Join(werr, f.Close()); err != nil {
			c.sftp.Remove(name) //nolint:errcheck // the write's error is the one to report
			return err
		}
		return c.sftp.Remove(name)
	})
}

// run connects, runs op with the connection cut when ctx ends, and
// classes its error; a connection that failed is closed.
func (c *Client) run(ctx context.Context, op func() error) error {
	if err := c.Connect(ctx); err != nil {
		return err
	}
	stop := c.conn.Bind(ctx)
	err := op()
	stop()
	if err == nil {
		return nil
	}
	var full errDiskFull
	if !errors.As(err, &full) && c.diskFull(err) {
		err = errDiskFull{err}
	}
	de := classify(ctx, err)
	if docflow.DestinationFailureOf(de) == docflow.DestUnavailable || c.conn.Aborted() != nil {
		c.Close(ctx) //nolint:errcheck // the connection is given up
	}
	return de
}

func (c *Client) mkdirs() error {
	switch c.cfg.Folder {
	case "", "/", ".":
		return nil
	}
	if fi, err := c.sftp.Stat(c.cfg.Folder); err == nil && fi.IsDir() {
		return nil
	}
	return c.sftp.MkdirAll(c.cfg.Folder)
}

// store writes body under a temporary name beside target, then renames it
// over target. The temporary file is removed when anything fails.
func (c *Client) store(ctx context.Context, target string, body io.Reader, size int64) error {
	tmp := upload.Join(c.cfg.Folder, upload.TempName())
	f, err := c.sftp.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err != nil {
		return err
	}
	src := &sourceReader{ctx: ctx, r: body}
	n, werr := f.ReadFromWithConcurrency(src, 0)
	cerr := f.Close()
	err = errors.Join(werr, cerr)
	switch {
	case src.err != nil:
		err = &sourceError{src.err}
	case err == nil && size > 0 && n != size:
		err = &sourceError{fmt.Errorf("the document ended after %d of %d bytes", n, size)}
	}
	if err == nil {
		err = c.replace(tmp, target)
	}
	if err != nil {
		if c.diskFull(err) {
			err = errDiskFull{err}
		}
		c.sftp.Remove(tmp) //nolint:errcheck // best effort; the first error is the one to report
	}
	return err
}

// diskFull reports whether a generic failure of a write (SSH_FX_FAILURE,
// which is how OpenSSH answers a full disk) came with no space left in
// the folder's file system, as the server's statvfs extension says.
func (c *Client) diskFull(err error) bool {
	var st *sftp.StatusError
	if !errors.As(err, &st) || st.Code != 4 {
		return false
	}
	if _, ok := c.sftp.HasExtension("statvfs@openssh.com"); !ok {
		return false
	}
	dir := c.cfg.Folder
	if dir == "" {
		dir = "."
	}
	vfs, serr := c.sftp.StatVFS(dir)
	return serr == nil && vfs.Bavail*vfs.Frsize < fullBelow
}

// fullBelow is the free space under which a failed write is taken as a
// full disk.
const fullBelow = 1 << 20

// errDiskFull is a write that failed on a full disk.
type errDiskFull struct{ err error }

func (e errDiskFull) Error() string { return "disk full: " + e.err.Error() }
func (e errDiskFull) Unwrap() error { return e.err }

// replace renames tmp over target: in one step where the server has
// OpenSSH's posix-rename, else by removing target first (plain SFTP
// renames refuse an existing target).
func (c *Client) replace(tmp, target string) error {
	if _, ok := c.sftp.HasExtension("posix-rename@openssh.com"); ok {
		return c.sftp.PosixRename(tmp, target)
	}
	if err := c.sftp.Rename(tmp, target); err == nil {
		return nil
	}
	if err := c.sftp.Remove(target); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return c.sftp.Rename(tmp, target)
}

// sourceReader remembers the error of the document's own reader, which
// is no failure of the server, and stops reading when ctx ends.
type sourceReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

type sourceError struct{ err error }

func (e *sourceError) Error() string { return "read the document: " + e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// subsystemError is the refusal of the SFTP subsystem after a login.
type subsystemError struct{ err error }

func (e *subsystemError) Error() string { return "open the sftp subsystem: " + e.err.Error() }
func (e *subsystemError) Unwrap() error { return e.err }

// Location implements docflow.DestinationLocation.
func (c *Client) Location() string { return upload.Location("sftp", c.cfg.addr(), c.cfg.Folder) }
