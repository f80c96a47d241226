// Package desttest is the contract suite of docflow.DestinationClient: every
// destination type's client runs it against a real server (or, for the
// cloud services that cannot run here, an in-process server that answers as
// the published API says). It checks what the delivery engine relies on:
// a delivery stores the bytes under the name given; the same name twice
// leaves one object with the newer content; a large body is streamed, not
// held in memory; a name with unusual characters arrives; a cancelled
// delivery returns promptly; the probe leaves nothing behind; and failures
// carry the class the engine acts on (an unreachable server
// DestUnavailable, refused credentials DestAuth, no right to write
// DestForbidden, a full disk or quota DestFull).
//
// A client's test builds a Target and calls Run:
//
//	desttest.Run(t, desttest.Target{
//		New:  func(t testing.TB) docflow.DestinationClient { return webdav.New(cfg) },
//		List: func(t testing.TB) []string { … names in the folder on the server … },
//		Open: func(t testing.TB, remote string) io.ReadCloser { … },
//		Unreachable:    …, BadCredentials: …, Forbidden: …,
//	})
//
// The large delivery is LargeSize bytes (DESTTEST_LARGE_SIZE overrides it,
// e.g. "1GiB" for the opt-in run). Its memory check samples this process's
// heap, so a server running in the test's own process must write what it
// receives to disk, not keep it in memory.
package desttest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

// Target is one destination under test.
type Target struct {
	// New returns a client of the destination under test with credentials
	// the server accepts, not yet connected. Required.
	New func(t testing.TB) docflow.DestinationClient
	// List returns the names stored in the destination's folder (where the
	// clients of New deliver), read on the server. Required.
	List func(t testing.TB) []string
	// Open reads back what the server stores at remotePath, as Deliver
	// returned it. Required.
	Open func(t testing.TB, remotePath string) io.ReadCloser

	// Unreachable returns a client of an address where nothing answers
	// (a closed port). Its errors must be DestUnavailable.
	Unreachable func(t testing.TB) docflow.DestinationClient
	// BadCredentials returns a client whose credentials the server
	// refuses. Its errors must be DestAuth.
	BadCredentials func(t testing.TB) docflow.DestinationClient
	// Forbidden returns a client with valid credentials and no right to
	// write in its folder. Its errors must be DestForbidden.
	Forbidden func(t testing.TB) docflow.DestinationClient
	// Full returns a client of a destination whose disk or quota is full.
	// Its errors must be DestFull.
	Full func(t testing.TB) docflow.DestinationClient

	// LargeSize is the size of the large streamed delivery (default
	// 24 MiB; the environment's DESTTEST_LARGE_SIZE, e.g. "1GiB",
	// overrides it).
	LargeSize int64
	// MemoryBudget bounds how much this process's heap may grow during
	// the large delivery (default 16 MiB, and never more than half of
	// LargeSize: memory that grows with the body fails).
	MemoryBudget int64
	// Skip names the checks that do not apply to this destination, each
	// with the reason the test output gives: "overwrite", "unusual_name",
	// "large", "cancel", "probe", and the failure checks "unreachable",
	// "bad_credentials", "forbidden", "full" when their constructor is nil.
	Skip map[string]string
}

// Timeouts of the suite.
const (
	callTimeout = 2 * time.Minute
	// failTimeout bounds an unreachable or refused delivery: a client
	// must not hang on a closed port.
	failTimeout = 45 * time.Second
	// cancelGrace is how soon a delivery must return once its context is
	// cancelled.
	cancelGrace = 10 * time.Second
)

// Run runs the contract suite against tg, one subtest per check.
func Run(t *testing.T, tg Target) {
	t.Helper()
	if tg.New == nil || tg.List == nil || tg.Open == nil {
		t.Fatal("desttest: Target needs New, List and Open")
	}
	checks := []struct {
		name string
		run  func(*testing.T, Target)
	}{
		{"deliver", testDeliver},
		{"overwrite", testOverwrite},
		{"unusual_name", testUnusualName},
		{"probe", testProbe},
		{"large", testLarge},
		{"cancel", testCancel},
		{"unreachable", failureCheck(func(tg Target) func(testing.TB) docflow.DestinationClient { return tg.Unreachable }, docflow.DestUnavailable)},
		{"bad_credentials", failureCheck(func(tg Target) func(testing.TB) docflow.DestinationClient { return tg.BadCredentials }, docflow.DestAuth)},
		{"forbidden", failureCheck(func(tg Target) func(testing.TB) docflow.DestinationClient { return tg.Forbidden }, docflow.DestForbidden)},
		{"full", failureCheck(func(tg Target) func(testing.TB) docflow.DestinationClient { return tg.Full }, docflow.DestFull)},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if why, ok := tg.Skip[c.name]; ok {
				t.Skipf("%s does not apply: %s", c.name, why)
			}
			c.run(t, tg)
		})
	}
}

// Doc returns the DestinationDoc the suite delivers: name, size, and a
// title and date for clients that store them.
func Doc(name string, size int64) docflow.DestinationDoc {
	return docflow.DestinationDoc{FileID: 4242, Name: name, MimeType: "application/pdf", Size: size,
		Title: "Contract suite " + name, Date: "2026-11-29", Category: "test",
		OriginalFilename: name, Tags: []string{"desttest"}}
}

// UniqueName returns a file name no earlier run used, with the prefix and
// extension given.
func UniqueName(prefix, ext string) string {
	return fmt.Sprintf("%s-%d-%d%s", prefix, time.Now().UnixNano(), rand.IntN(1e6), ext)
}

// connected returns tg.New's client, connected; it is closed at the end
// of the test.
func connected(t *testing.T, newClient func(testing.TB) docflow.DestinationClient) docflow.DestinationClient {
	t.Helper()
	c := newClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Close(ctx) //nolint:errcheck // the test is over
	})
	return c
}

func deliver(t *testing.T, c docflow.DestinationClient, name string, body []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	remote, err := c.Deliver(ctx, Doc(name, int64(len(body))), bytes.NewReader(body))
	if err != nil {
		t.Fatalf("deliver %q: %v", name, err)
	}
	if remote == "" {
		t.Fatalf("deliver %q: empty remote path", name)
	}
	return remote
}

func readBack(t *testing.T, tg Target, remote string) []byte {
	t.Helper()
	rc := tg.Open(t, remote)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read back %q: %v", remote, err)
	}
	return b
}

// count returns how many names in list are name or hold it (a destination
// may keep the name inside a longer path).
func count(list []string, name string) int {
	n := 0
	for _, s := range list {
		if s == name || strings.HasSuffix(s, "/"+name) {
			n++
		}
	}
	return n
}

func testDeliver(t *testing.T, tg Target) {
	c := connected(t, tg.New)
	name := UniqueName("deliver", ".pdf")
	body := []byte("%PDF-1.4 contract suite: deliver\n")
	remote := deliver(t, c, name, body)
	if got := readBack(t, tg, remote); !bytes.Equal(got, body) {
		t.Fatalf("stored %q, want %q", got, body)
	}
	if n := count(tg.List(t), name); n != 1 {
		t.Fatalf("%d objects named %q after one delivery, want 1", n, name)
	}
	// An empty document is a document too.
	empty := UniqueName("empty", ".txt")
	remote = deliver(t, c, empty, nil)
	if got := readBack(t, tg, remote); len(got) != 0 {
		t.Fatalf("empty document stored as %d bytes", len(got))
	}
}

func testOverwrite(t *testing.T, tg Target) {
	c := connected(t, tg.New)
	name := UniqueName("overwrite", ".pdf")
	first := deliver(t, c, name, []byte("first version, longer than the second one"))
	second := deliver(t, c, name, []byte("second version"))
	if first != second {
		t.Errorf("the same name went to %q, then %q", first, second)
	}
	if got := readBack(t, tg, second); string(got) != "second version" {
		t.Fatalf("after the second delivery the object holds %q", got)
	}
	if n := count(tg.List(t), name); n != 1 {
		t.Fatalf("%d objects named %q after two deliveries, want 1 (overwritten)", n, name)
	}
	// A fresh client (another process, after a restart) overwrites too.
	c2 := connected(t, tg.New)
	deliver(t, c2, name, []byte("third version"))
	if got := readBack(t, tg, second); string(got) != "third version" {
		t.Fatalf("after a delivery by a new client the object holds %q", got)
	}
	if n := count(tg.List(t), name); n != 1 {
		t.Fatalf("%d objects named %q after a new client's delivery, want 1", n, name)
	}
}

// UnusualNames are file names a destination must store as given (they are
// what a filename_template makes of real titles): spaces, accents, signs
// that URLs and shells treat specially, a name with no extension.
var UnusualNames = []string{
	"Rechnung März 2026 (Kopie) #3 – 100% & Co; ü€ 'x'.pdf",
	"a+b=c, [draft] {v2} ~tilde~ @home!.pdf",
	"日本語の請求書.pdf",
	"no extension",
	"dots.in.the.name..pdf",
}

func testUnusualName(t *testing.T, tg Target) {
	c := connected(t, tg.New)
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
	for i, base := range UnusualNames {
		name := suffix + " " + base
		body := []byte(fmt.Sprintf("unusual name %d", i))
		remote := deliver(t, c, name, body)
		if got := readBack(t, tg, remote); !bytes.Equal(got, body) {
			t.Errorf("%q: stored %q, want %q", name, got, body)
		}
		if n := count(tg.List(t), name); n != 1 {
			t.Errorf("%q: %d objects of that name, want 1", name, n)
		}
	}
}

func testProbe(t *testing.T, tg Target) {
	// The probe must work on a folder that is empty or missing as well.
	c := tg.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx) //nolint:errcheck
	before := tg.List(t)
	if err := c.Probe(ctx); err != nil {
		t.Fatalf("probe: %v", err)
	}
	after := tg.List(t)
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Fatalf("the probe left something behind: before %v, after %v", before, after)
	}
}

func testLarge(t *testing.T, tg Target) {
	size := tg.LargeSize
	if size <= 0 {
		size = 24 << 20
	}
	if v := os.Getenv("DESTTEST_LARGE_SIZE"); v != "" {
		n, err := ParseSize(v)
		if err != nil {
			t.Fatalf("DESTTEST_LARGE_SIZE: %v", err)
		}
		size = n
	}
	budget := tg.MemoryBudget
	if budget <= 0 {
		budget = 16 << 20
	}
	budget = min(budget, size/2)

	c := connected(t, tg.New)
	name := UniqueName("large", ".bin")
	body := NewBody(7, size)
	heap := WatchHeap(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout+time.Duration(size>>20)*time.Second)
	defer cancel()
	start := time.Now()
	remote, err := c.Deliver(ctx, Doc(name, size), body)
	grew := heap.Stop()
	if err != nil {
		t.Fatalf("deliver %d bytes: %v", size, err)
	}
	took := time.Since(start)
	if body.Read64() != size {
		t.Fatalf("the client read %d of %d bytes", body.Read64(), size)
	}
	t.Logf("%d MiB delivered in %v (%.1f MiB/s); heap grew by %.1f MiB (budget %.1f MiB)",
		size>>20, took.Round(time.Millisecond), float64(size)/(1<<20)/took.Seconds(), float64(grew)/(1<<20), float64(budget)/(1<<20))
	if grew > budget {
		t.Errorf("the heap grew by %d bytes while delivering %d bytes: more than the budget of %d (is the body held in memory?)", grew, size, budget)
	}
	rc := tg.Open(t, remote)
	defer rc.Close()
	h := sha256.New()
	n, err := io.Copy(h, rc)
	if err != nil {
		t.Fatalf("read back: %v", err)
	}
	if n != size || !bytes.Equal(h.Sum(nil), body.Sum()) {
		t.Fatalf("stored %d bytes that differ from the %d sent", n, size)
	}
}

func testCancel(t *testing.T, tg Target) {
	c := connected(t, tg.New)
	size := int64(64 << 20)
	body := &stallingReader{Body: NewBody(9, size), after: 1 << 20, release: make(chan struct{}), stalled: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Deliver(ctx, Doc(UniqueName("cancel", ".bin"), size), body)
		done <- err
	}()
	// Cancel once the client is sending (or after a while, for clients
	// that buffer nothing before they ask for the body).
	select {
	case <-body.stalled:
	case <-time.After(5 * time.Second):
	}
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cancelled delivery succeeded")
		}
	case <-time.After(cancelGrace):
		close(body.release)
		t.Fatalf("the delivery did not return within %v of its cancellation", cancelGrace)
	}
	close(body.release)
	// The client is still usable (or reconnects) after a cancelled call.
	c2 := connected(t, tg.New)
	deliver(t, c2, UniqueName("after-cancel", ".pdf"), []byte("after cancel"))
}

func failureCheck(pick func(Target) func(testing.TB) docflow.DestinationClient, want docflow.DestinationFailure) func(*testing.T, Target) {
	return func(t *testing.T, tg Target) {
		newClient := pick(tg)
		if newClient == nil {
			t.Skipf("no client for this case (set Target.Skip to say why it cannot happen here)")
		}
		c := newClient(t)
		ctx, cancel := context.WithTimeout(context.Background(), failTimeout)
		defer cancel()
		defer c.Close(context.Background()) //nolint:errcheck
		err := c.Connect(ctx)
		if err == nil {
			_, err = c.Deliver(ctx, Doc(UniqueName("refused", ".pdf"), 9), strings.NewReader("refused!\n"))
		}
		CheckFailure(t, "deliver", err, want)
		if ctx.Err() != nil {
			t.Fatalf("the failure took the whole %v", failTimeout)
		}
		perr := c.Probe(ctx)
		CheckFailure(t, "probe", perr, want)
	}
}

// CheckFailure fails t unless err is a *docflow.DestinationError of class
// want with a reason to show.
func CheckFailure(t testing.TB, what string, err error, want docflow.DestinationFailure) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: succeeded, want a %s failure", what, want)
	}
	var de *docflow.DestinationError
	if !errors.As(err, &de) {
		t.Fatalf("%s: %v (%T) is not a *docflow.DestinationError", what, err, err)
	}
	if de.Class != want {
		t.Fatalf("%s: class %q (%v), want %q", what, de.Class, err, want)
	}
	if strings.TrimSpace(de.Error()) == "" || strings.TrimSpace(de.Error()) == string(de.Class) && de.Reason == "" {
		t.Errorf("%s: the %s failure says nothing more than its class: %v", what, want, err)
	}
	t.Logf("%s: %s: %v", what, de.Class, err)
}

// Body is a deterministic stream of pseudo-random bytes of a given size,
// generated as it is read (never held), which keeps the SHA-256 of what
// was read.
type Body struct {
	rng  *rand.ChaCha8
	left int64
	read atomic.Int64
	h    interface {
		io.Writer
		Sum([]byte) []byte
	}
}

// NewBody returns size bytes from seed.
func NewBody(seed byte, size int64) *Body {
	var s [32]byte
	s[0] = seed
	return &Body{rng: rand.NewChaCha8(s), left: size, h: sha256.New()}
}

func (b *Body) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, _ := b.rng.Read(p)
	b.h.Write(p[:n]) //nolint:errcheck // hashes never fail
	b.left -= int64(n)
	b.read.Add(int64(n))
	return n, nil
}

// Read64 is how many bytes were read so far.
func (b *Body) Read64() int64 { return b.read.Load() }

// Sum is the SHA-256 of what was read.
func (b *Body) Sum() []byte { return b.h.Sum(nil) }

// stallingReader gives `after` bytes at once, then trickles (a few KiB
// every 50 ms) until release is closed, so a delivery is in flight when
// the test cancels it. Like a slow disk or network, it never blocks for
// long: a client that reads the body itself sees its context between reads.
type stallingReader struct {
	*Body
	after   int64
	release chan struct{}
	once    sync.Once
	stalled chan struct{}
}

func (s *stallingReader) Read(p []byte) (int, error) {
	if s.Read64() >= s.after {
		s.once.Do(func() { close(s.stalled) })
		select {
		case <-s.release:
			return 0, errors.New("desttest: released after the cancellation")
		case <-time.After(50 * time.Millisecond):
		}
		p = p[:min(len(p), 4096)]
		return s.Body.Read(p)
	}
	if int64(len(p)) > s.after-s.Read64() {
		p = p[:s.after-s.Read64()]
	}
	return s.Body.Read(p)
}

// HeapWatch samples this process's heap until Stop.
type HeapWatch struct {
	base uint64
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

// WatchHeap collects garbage, notes the heap in use and samples it every
// interval.
func WatchHeap(interval time.Duration) *HeapWatch {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	w := &HeapWatch{base: ms.HeapInuse, stop: make(chan struct{}), done: make(chan struct{})}
	w.peak.Store(ms.HeapInuse)
	go func() {
		defer close(w.done)
		tk := time.NewTicker(interval)
		defer tk.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tk.C:
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > w.peak.Load() {
					w.peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	return w
}

// Stop ends the sampling and returns how far the heap in use rose above
// where it started.
func (w *HeapWatch) Stop() int64 {
	close(w.stop)
	<-w.done
	if p := w.peak.Load(); p > w.base {
		return int64(p - w.base)
	}
	return 0
}

// ParseSize reads a size: bytes, or a number with KiB, MiB or GiB.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want bytes or a number with KiB, MiB or GiB", s)
	}
	return n * mult, nil
}
