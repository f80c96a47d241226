package imap

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// fuzzSink takes every attachment in, reading its body to the end.
type fuzzSink struct {
	mu  sync.Mutex
	got []*Attachment
	n   int64 // body bytes read
}

func (s *fuzzSink) MailSeen(context.Context, string) (bool, []int, error) { return false, nil, nil }

func (s *fuzzSink) Ingest(_ context.Context, a *Attachment) error {
	n, err := io.Copy(io.Discard, a.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, a)
	s.n += n
	if err != nil {
		return docflow.Errorf(docflow.EBADREQUEST, "unreadable: %v", err)
	}
	return nil
}

func (s *fuzzSink) MailsDone(context.Context, []string) error { return nil }

// mailSeeds are whole messages as a server sends them: attachments
// plain, base64, with RFC 2047 and RFC 2231 names, nested, path-like,
// more than max_attachments, and broken.
var mailSeeds = []string{
	"From: A <a@example.com>\r\nSubject: scan\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Jan 2006 15:04:05 -0700\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b\r\n" +
		"Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"../../etc/a.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b--\r\n",
	"Subject: =?utf-8?q?R=C3=A9sum=C3=A9?=\r\nContent-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n--i\r\n" +
		"Content-Type: image/png; name=\"=?utf-8?b?w6kucG5n?=\"\r\n\r\n\x89PNG\r\n--i--\r\n--o\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename*=utf-8''%E2%80%AEfdp.exe.pdf\r\n\r\n%PDF\r\n--o--\r\n",
	"Content-Type: multipart/mixed; boundary=z\r\n\r\n" + strings.Repeat("--z\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment\r\n\r\nx\r\n", 12) + "--z--\r\n",
	"Content-Type: application/pdf\r\nContent-Disposition: attachment; filename=CON.pdf\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=25PDF=\r\n",
	"Content-Type: multipart/mixed; boundary=\"\"\r\n\r\n--\r\n\r\n",
	"no header at all",
	"Message-ID: <" + strings.Repeat("m", 300) + ">\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Disposition: attachment; filename=a.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!\r\n--b",
}

// FuzzReadMail: whatever a message's bytes, readMail reads it to its end
// in bounded time without a panic or an error (the literal is whole and the sink takes
// everything: a broken mail is skipped, never retried); the mail gets a
// key of bounded length; at most max_attachments attachments are handed
// over, each once, with a clean name (CleanFilename's, no path) of a
// supported type; and no more bytes come out of the attachments than
// went into the message (decoding never grows it). Seeds: mailSeeds and
// testdata/fuzz/FuzzReadMail.
func FuzzReadMail(f *testing.F) {
	for i, s := range mailSeeds {
		f.Add([]byte(s), uint8(i))
	}
	f.Fuzz(func(t *testing.T, raw []byte, maxAtt uint8) {
		k := &Client{cfg: Config{MaxAttachments: int(maxAtt%8) + 1}, uidValidity: 7}
		sink := &fuzzSink{}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tr := &trackReader{r: bytes.NewReader(raw), size: int64(len(raw))}
		var p *pending
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			p, err = k.readMail(ctx, 42, tr, sink, make(chan struct{}, 4), zerolog.Nop())
			if p != nil {
				p.wg.Wait()
			}
		}()
		// A hang is a failure with its input, not a run that never ends.
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("reading a %d-byte mail has not ended in 2 minutes", len(raw))
		}
		if err != nil || p == nil || p.err != nil {
			t.Fatalf("readMail: %v (pending %v)", err, p)
		}
		if p.key == "" || len(p.key) > maxKeyLen+2 {
			t.Fatalf("key %q", p.key)
		}
		if len(sink.got) > k.cfg.MaxAttachments {
			t.Fatalf("%d attachments handed over, max_attachments %d", len(sink.got), k.cfg.MaxAttachments)
		}
		if sink.n > int64(len(raw)) {
			t.Fatalf("%d bytes of attachments from a message of %d", sink.n, len(raw))
		}
		seen := map[int]bool{}
		for _, a := range sink.got {
			if a.MessageKey != p.key || a.Index < 0 || seen[a.Index] {
				t.Fatalf("attachment %+v of %q", a, p.key)
			}
			seen[a.Index] = true
			name := a.Filename
			if name != docflow.CleanFilename(name) || strings.ContainsAny(name, "/\\") || strings.Contains(name, "..") {
				t.Fatalf("attachment named %q", name)
			}
			if _, ok := docflow.SupportedFileTypes()[ext(name)]; !ok {
				t.Fatalf("attachment %q of an unsupported type", name)
			}
			if a.Mail.Date != "" {
				if _, err := time.Parse(time.RFC3339, a.Mail.Date); err != nil {
					t.Fatalf("date %q", a.Mail.Date)
				}
			}
		}
	})
}
