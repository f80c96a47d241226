// Package upload holds what the destinations that speak a protocol of
// their own over one connection (SFTP, FTP, EMAIL) share: a connection
// whose every read and write has an idle deadline and which a context
// can cut, the temporary name an upload is written under before it is
// renamed over the target, the checks of the names and folders they
// write to, and the form in which a server's refusal is shown.
package upload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
)

// DefaultIdle is how long a read or write may make no progress before the
// connection is taken as lost.
const DefaultIdle = 60 * time.Second

// Conn is a net.Conn whose reads and writes each get a deadline Idle from
// their start, so a stalled server fails a transfer of any length while a
// slow one does not; Bind lets a context cut it.
type Conn struct {
	net.Conn
	idle time.Duration
	// drain: Close first ends the sending side and reads what the far
	// side still sends (see Drain); wrote: a Write sent something.
	drain, wrote bool

	mu      sync.Mutex
	aborted error
}

// Wrap returns c with an idle deadline of idle (DefaultIdle when <= 0)
// on every read and write.
func Wrap(c net.Conn, idle time.Duration) *Conn {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Conn{Conn: c, idle: idle}
}

// Drain makes Close of a connection that sent something end the sending
// side first (TCP FIN), then read and discard what the far side still
// sends until it closes too (at most DrainWait), and only then close. Closing a socket with unread data in
// it resets the connection, and a reset can destroy data the far side
// has received but not yet read: an FTP server that sent a TLS session
// ticket on an upload's data connection, which the uploader never reads,
// would lose the upload's last bytes.
func (c *Conn) Drain() *Conn {
	c.drain = true
	return c
}

// DrainWait bounds how long Close waits for the far side to close.
const DrainWait = 10 * time.Second

// Close closes the connection, after draining it when Drain was called.
func (c *Conn) Close() error {
	c.mu.Lock()
	drain := c.drain && c.wrote && c.aborted == nil
	c.mu.Unlock()
	if drain {
		if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok && hc.CloseWrite() == nil {
			c.Conn.SetReadDeadline(time.Now().Add(DrainWait))  //nolint:errcheck // a failed drain still closes
			io.Copy(io.Discard, io.LimitReader(c.Conn, 1<<20)) //nolint:errcheck // read until the far side closes
		}
	}
	return c.Conn.Close()
}

func (c *Conn) Read(b []byte) (int, error) {
	if err := c.arm(c.Conn.SetReadDeadline); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *Conn) Write(b []byte) (int, error) {
	if err := c.arm(c.Conn.SetWriteDeadline); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(b)
	if n > 0 && c.drain {
		c.mu.Lock()
		c.wrote = true
		c.mu.Unlock()
	}
	return n, err
}

// arm sets the next deadline, unless a context already cut the
// connection (its deadline then stays in the past).
func (c *Conn) arm(set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted != nil {
		return c.aborted
	}
	return set(time.Now().Add(c.idle))
}

// SetIdle changes the idle deadline of the reads and writes that follow
// (a server may take long to answer one command, as SMTP's end of data).
func (c *Conn) SetIdle(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.idle = d
	}
}

// Bind makes ctx's end cut the connection: every read and write then
// fails at once with ctx's error. The returned func stops watching ctx;
// call it when the operation ends.
func (c *Conn) Bind(ctx context.Context) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.aborted == nil {
			c.aborted = ctx.Err()
			c.Conn.SetDeadline(time.Unix(1, 0)) //nolint:errcheck // the connection is being given up
		}
	})
}

// Aborted is the error of the context that cut the connection, or nil.
func (c *Conn) Aborted() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

// TempName is a fresh name to upload under, in the target's folder, before
// the finished file is renamed over the target: a reader of the folder
// never sees a half-written file under the real name. It starts with a dot
// (hidden in listings) and is short whatever the target's length.
func TempName() string {
	var b [8]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read does not fail
	return ".docflow-upload-" + hex.EncodeToString(b[:]) + ".part"
}

// ProbeName is a fresh name for a destination test's probe file.
func ProbeName() string {
	var b [8]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand.Read does not fail
	return ".docflow-probe-" + hex.EncodeToString(b[:])
}

// ErrBadName is a document name that cannot be a file name in the folder.
var ErrBadName = errors.New("the file name is empty, a dot name, or holds a path separator or control character")

// CheckName refuses a name that is not one file name: empty, "." or "..",
// or holding a slash, a backslash, NUL or another control character. The
// delivery engine makes names safe before they reach a client; this is
// the client's own guard, so a name can never leave the folder.
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." {
		return ErrBadName
	}
	for _, r := range name {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f {
			return ErrBadName
		}
	}
	return nil
}

// Folder cleans a configured remote folder: "" stays "" (the login
// folder), anything else is path.Clean'ed ("/" the server's root, "docs"
// relative to the login folder).
func Folder(p string) string {
	p = strings.TrimSpace(p)
	if p == "" || p == "." {
		return ""
	}
	return path.Clean(p)
}

// Join is name inside folder (Folder's form).
func Join(folder, name string) string {
	if folder == "" {
		return name
	}
	return path.Join(folder, name)
}

// Int reads the whole number m[k] (a JSON number, an int or its text),
// def when absent.
func Int(m map[string]any, k string, def int) (int, error) {
	switch v := m[k].(type) {
	case nil:
		return def, nil
	case float64:
		if v != float64(int(v)) {
			return 0, errors.New(k + " must be a whole number")
		}
		return int(v), nil
	case int:
		return v, nil
	case int64:
		return int(v), nil
	case string:
		var n int
		for _, r := range strings.TrimSpace(v) {
			if r < '0' || r > '9' || n > 1e8 {
				return 0, errors.New(k + " must be a whole number")
			}
			n = n*10 + int(r-'0')
		}
		return n, nil
	}
	return 0, errors.New(k + " must be a whole number")
}

// String reads the text m[k], trimmed ("" when absent or not text).
func String(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return strings.TrimSpace(s)
}

// Location is where a file-transfer destination delivers, for messages:
// scheme://host:port/folder, or the folder named apart when it is
// relative to the login folder. Never credentials.
func Location(scheme, addr, folder string) string {
	switch {
	case folder == "":
		return scheme + "://" + addr + " (the login folder)"
	case strings.HasPrefix(folder, "/"):
		return scheme + "://" + addr + folder
	}
	return scheme + "://" + addr + " (folder " + folder + " of the login folder)"
}

// Reply is a server's refusal as users see it: its reply code and the
// first line of its text, printable and at most 120 characters. It is the
// reason a server gives for refusing a command, never its greeting.
func Reply(code int, msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	msg = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(msg))
	if r := []rune(msg); len(r) > 120 {
		msg = string(r[:120]) + "…"
	}
	switch {
	case code == 0:
		return msg
	case msg == "":
		return strconv.Itoa(code)
	}
	return strconv.Itoa(code) + " " + msg
}
