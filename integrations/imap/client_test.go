package imap_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/netguard"
)

// memSink records what a poll hands over, keyed like the real store.
type memSink struct {
	mu    sync.Mutex
	done  map[string]bool
	taken map[string][]int
	files []string
	sizes []int64
	fail  error // returned by Ingest when set
}

func newSink() *memSink { return &memSink{done: map[string]bool{}, taken: map[string][]int{}} }

func (s *memSink) MailSeen(_ context.Context, key string) (bool, []int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done[key], append([]int(nil), s.taken[key]...), nil
}

func (s *memSink) Ingest(_ context.Context, a *imap.Attachment) error {
	if s.fail != nil {
		return s.fail
	}
	n, err := io.Copy(io.Discard, a.Body)
	if err != nil {
		return docflow.Errorf(docflow.EBADREQUEST, "Upload incomplete: %v", err)
	}
	if n == 0 {
		return docflow.Errorf(docflow.EBADREQUEST, "File is empty")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.taken[a.MessageKey] {
		if i == a.Index {
			return docflow.Errorf(docflow.ECONFLICT, "taken")
		}
	}
	s.taken[a.MessageKey] = append(s.taken[a.MessageKey], a.Index)
	s.files = append(s.files, a.Filename)
	s.sizes = append(s.sizes, n)
	return nil
}

func (s *memSink) MailsDone(_ context.Context, keys []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		s.done[k] = true
	}
	return nil
}

func config(t testing.TB, addr string, extra map[string]any) imap.Config {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	cfg := map[string]any{"host": host, "port": float64(p), "security": "none", "poll_interval": float64(10)}
	for k, v := range extra {
		cfg[k] = v
	}
	c, err := imap.ParseConfig(&docflow.Integration{ID: 1, Config: cfg,
		Credentials: map[string]string{"username": "alice", "password": "secret"}})
	if err != nil {
		t.Fatal(err)
	}
	c.IOTimeout = 5 * time.Second
	c.Dial = local
	return c
}

// local dials the test servers, on loopback, which a netguard dialer
// admits only when allowed.
var local = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}.DialContext

func connect(t testing.TB, cfg imap.Config, news func()) *imap.Client {
	t.Helper()
	k, err := imap.New(cfg, news)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := k.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close(context.Background()) })
	return k
}

var nopLog = zerolog.Nop()

func poll(t testing.TB, k *imap.Client, cur docflow.MailCursor, sink imap.Sink) imap.PollResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := k.Poll(ctx, cur, sink, 30*time.Second, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestPollTakesSupportedAttachmentsOnceAndFlagsSeen(t *testing.T) {
	t.Parallel()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	ctx := context.Background()
	pdf := imaptest.Attachment{Name: "invoice.pdf", ContentType: "application/pdf", Data: imaptest.PDF("a", 2000)}
	png := imaptest.Attachment{Name: "../../etc/scan.png", ContentType: "image/png", Data: []byte("\x89PNG\r\n\x1a\nrest")}
	exe := imaptest.Attachment{Name: "tool.exe", Data: []byte("MZ")}
	mails := [][]byte{
		imaptest.Mail("m1@example.com", "two docs", pdf, png),
		imaptest.Mail("m2@example.com", "unsupported only", exe),
		imaptest.Mail("", "no message id", imaptest.Attachment{Name: "b.pdf", Data: imaptest.PDF("b", 100)}),
		imaptest.Mail("m4@example.com", "no attachment"),
	}
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", mails...); err != nil {
		t.Fatal(err)
	}
	k := connect(t, config(t, addr, nil), nil)
	sink := newSink()
	res := poll(t, k, docflow.MailCursor{}, sink)
	if res.Seen != 4 || res.Ingested != 3 || res.Cursor.LastUID != 4 || res.More {
		t.Fatalf("poll = %+v", res)
	}
	want := "b.pdf,invoice.pdf,scan.png"
	sort.Strings(sink.files)
	if got := strings.Join(sink.files, ","); got != want {
		t.Fatalf("files = %s, want %s", got, want)
	}
	if !sink.done["<m2@example.com>"] || !sink.done["<m4@example.com>"] {
		t.Fatalf("mails without usable attachment not finished: %v", sink.done)
	}
	if _, unseen, err := imaptest.Count(addr, "alice", "secret", "INBOX"); err != nil || unseen != 0 {
		t.Fatalf("unseen = %d, %v", unseen, err)
	}
	// A restart from an older cursor takes nothing twice.
	again := poll(t, k, docflow.MailCursor{}, sink)
	if again.Ingested != 0 || len(sink.files) != 3 {
		t.Fatalf("second poll = %+v, files %v", again, sink.files)
	}
}

func TestPollAfterActionsMoveAndDelete(t *testing.T) {
	t.Parallel()
	addr := imaptest.MemServer(t, "alice", "secret", false, "Done")
	ctx := context.Background()
	att := imaptest.Attachment{Name: "a.pdf", Data: imaptest.PDF("x", 100)}
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", imaptest.Mail("1@x", "s", att), imaptest.Mail("2@x", "s", att)); err != nil {
		t.Fatal(err)
	}
	k := connect(t, config(t, addr, map[string]any{"move_to_folder": "Done"}), nil)
	poll(t, k, docflow.MailCursor{}, newSink())
	if n, _, _ := imaptest.Count(addr, "alice", "secret", "INBOX"); n != 0 {
		t.Fatalf("INBOX still holds %d", n)
	}
	if n, _, _ := imaptest.Count(addr, "alice", "secret", "Done"); n != 2 {
		t.Fatalf("Done holds %d", n)
	}

	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", imaptest.Mail("3@x", "s", att)); err != nil {
		t.Fatal(err)
	}
	d := connect(t, config(t, addr, map[string]any{"delete_after_process": true}), nil)
	res := poll(t, d, docflow.MailCursor{}, newSink())
	if res.Ingested != 1 {
		t.Fatalf("poll = %+v", res)
	}
	if n, _, _ := imaptest.Count(addr, "alice", "secret", "INBOX"); n != 0 {
		t.Fatalf("INBOX still holds %d after delete", n)
	}
}

func TestHostileMailsAreBoundedAndFinished(t *testing.T) {
	t.Parallel()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	ctx := context.Background()
	long := strings.Repeat("n", 1000) + ".pdf"
	bomb := make([]imaptest.Attachment, 10000)
	for i := range bomb {
		bomb[i] = imaptest.Attachment{Name: fmt.Sprintf("t%d.txt", i), Data: []byte(fmt.Sprintf("tiny %d", i))}
	}
	badB64 := []byte("From: x@y\r\nMessage-ID: <bad@x>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=bad.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK=x==\r\n--b--\r\n")
	malformed := []byte("From: x@y\r\nMessage-ID: <mal@x>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"zz\r\n\r\ngarbage without boundary\r\n")
	mails := [][]byte{
		imaptest.Mail("long@x", "long name", imaptest.Attachment{Name: "C:\\Users\\x\\..\\" + long, Data: imaptest.PDF("l", 100)}),
		imaptest.Mail("bomb@x", "bomb", bomb...),
		badB64,
		malformed,
	}
	if err := imaptest.Append(ctx, addr, "alice", "secret", "INBOX", mails...); err != nil {
		t.Fatal(err)
	}
	k := connect(t, config(t, addr, map[string]any{"max_attachments": float64(50)}), nil)
	sink := newSink()
	res := poll(t, k, docflow.MailCursor{}, sink)
	if res.Seen != 4 || res.Ingested != 51 {
		t.Fatalf("poll = %+v", res)
	}
	var pdfs []string
	for _, f := range sink.files {
		if strings.HasSuffix(f, ".pdf") {
			pdfs = append(pdfs, f)
		}
	}
	if len(pdfs) != 1 || len(pdfs[0]) > 255 || strings.ContainsAny(pdfs[0], `/\`) || !strings.HasPrefix(pdfs[0], "nnnn") {
		t.Fatalf("long name = %q", pdfs)
	}
	for _, key := range []string{"<bomb@x>", "<bad@x>", "<long@x>"} {
		if !sink.done[key] {
			t.Fatalf("%s not finished: %v", key, sink.done)
		}
	}
	if _, unseen, _ := imaptest.Count(addr, "alice", "secret", "INBOX"); unseen != 0 {
		t.Fatalf("unseen = %d", unseen)
	}
}

func TestTransientIngestErrorKeepsTheMail(t *testing.T) {
	t.Parallel()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	att := imaptest.Attachment{Name: "a.pdf", Data: imaptest.PDF("x", 100)}
	if err := imaptest.Append(context.Background(), addr, "alice", "secret", "INBOX", imaptest.Mail("1@x", "s", att)); err != nil {
		t.Fatal(err)
	}
	k := connect(t, config(t, addr, nil), nil)
	sink := newSink()
	sink.fail = fmt.Errorf("database down")
	ctx := context.Background()
	res, err := k.Poll(ctx, docflow.MailCursor{}, sink, time.Minute, zerolog.Nop())
	if err == nil || res.Cursor.LastUID != 0 {
		t.Fatalf("poll = %+v, %v", res, err)
	}
	if _, unseen, _ := imaptest.Count(addr, "alice", "secret", "INBOX"); unseen != 1 {
		t.Fatalf("unseen = %d", unseen)
	}
	sink.fail = nil
	if res := poll(t, k, res.Cursor, sink); res.Ingested != 1 {
		t.Fatalf("retry = %+v", res)
	}
}

func TestWrongPasswordTellsTheServersReason(t *testing.T) {
	t.Parallel()
	addr := imaptest.MemServer(t, "alice", "other", false)
	cfg := config(t, addr, nil)
	k, _ := imap.New(cfg, nil)
	err := k.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "login refused") {
		t.Fatalf("connect = %v", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	ok, msg := imap.Tester{Dial: local}.TestIntegration(context.Background(), &docflow.Integration{
		Config:      map[string]any{"host": host, "port": float64(p), "security": "none"},
		Credentials: map[string]string{"username": "alice", "password": "secret"}})
	if ok || !strings.Contains(msg, "login refused") || strings.Contains(msg, "secret") {
		t.Fatalf("test = %v %q", ok, msg)
	}
}

func TestPlainRefusedToARemoteHostUnlessAllowed(t *testing.T) {
	t.Parallel()
	in := &docflow.Integration{Config: map[string]any{"host": "mail.example.com", "security": "none"},
		Credentials: map[string]string{"username": "a", "password": "b"}}
	if _, err := imap.ParseConfig(in); err == nil {
		t.Fatal("plain to a remote host accepted")
	}
	in.Config["allow_insecure"] = true
	if _, err := imap.ParseConfig(in); err != nil {
		t.Fatal(err)
	}
}
