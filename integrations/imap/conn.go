package imap

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// ErrConnection marks an error as the loss or failure of the connection:
// the owner closes the client and connects again (after its backoff).
var ErrConnection = errors.New("imap connection failed")

// connErr wraps err as a connection failure.
func connErr(err error) error {
	if err == nil || errors.Is(err, ErrConnection) {
		return err
	}
	return &wrapped{err}
}

type wrapped struct{ err error }

func (w *wrapped) Error() string        { return "imap connection: " + w.err.Error() }
func (w *wrapped) Unwrap() []error      { return []error{ErrConnection, w.err} }
func (w *wrapped) Is(target error) bool { return target == ErrConnection }

// isNetErr tells the errors of a connection that is gone or stalled from
// the server's answers to commands.
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded)
}

// deadlineConn gives every read and write its own deadline of timeout from
// its start, so a stalled server fails a command after timeout, however
// long the whole transfer lasts (a 200 MB attachment streams as long as it
// moves). While the client idles (IDLE), reads wait without deadline: the
// server speaks only when mail arrives.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	idle    atomic.Bool
	aborted atomic.Bool
	// readErr is the first error a read returned: the client's own error
	// messages flatten it, and Connect needs it to tell a broken
	// connection from a server that is not speaking IMAP.
	readErr atomic.Pointer[error]
}

func (c *deadlineConn) Read(p []byte) (int, error) {
	if c.aborted.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	if c.idle.Load() {
		c.Conn.SetReadDeadline(time.Time{}) //nolint:errcheck
	} else {
		c.Conn.SetReadDeadline(time.Now().Add(c.timeout)) //nolint:errcheck
	}
	n, err := c.Conn.Read(p)
	if err != nil {
		c.readErr.CompareAndSwap(nil, &err)
	}
	return n, err
}

// firstReadErr is the first error a read returned, or nil.
func (c *deadlineConn) firstReadErr() error {
	if p := c.readErr.Load(); p != nil {
		return *p
	}
	return nil
}

func (c *deadlineConn) Write(p []byte) (int, error) {
	if c.aborted.Load() {
		return 0, os.ErrDeadlineExceeded
	}
	c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)) //nolint:errcheck
	return c.Conn.Write(p)
}

// setIdle switches the read deadline off (IDLE) or back on; the change
// applies to a read already waiting.
func (c *deadlineConn) setIdle(on bool) {
	c.idle.Store(on)
	if on {
		c.Conn.SetReadDeadline(time.Time{}) //nolint:errcheck
	} else {
		c.Conn.SetReadDeadline(time.Now().Add(c.timeout)) //nolint:errcheck
	}
}

// abort makes every pending and future read and write fail at once (a
// cancelled context).
func (c *deadlineConn) abort() {
	c.aborted.Store(true)
	c.Conn.SetDeadline(time.Unix(1, 0)) //nolint:errcheck
}

// trackReader remembers the error of the reader below a MIME decoder, to
// tell a broken connection (retry) from a broken mail (skip). A literal
// that ends before its announced size is such an error too: a connection
// closed mid-FETCH reads as an early EOF.
type trackReader struct {
	r    io.Reader
	size int64 // announced size, -1 unknown
	n    int64
	err  error
}

func (t *trackReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	if err == io.EOF && t.size >= 0 && t.n < t.size {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

// IsConnection reports whether err is a failure of the connection (as
// opposed to the server's answer, or the sink's error).
func IsConnection(err error) bool { return errors.Is(err, ErrConnection) }
