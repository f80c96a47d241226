package imap_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/imap/imaptest"
)

// bigMail streams a mail with one attachment of size bytes (base64), for
// APPEND without holding it.
func bigMail(size int) (io.Reader, int64) {
	head := "From: x@y\r\nMessage-ID: <big@x>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n" +
		"--b\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=big.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"
	tail := "\r\n--b--\r\n"
	pr, pw := io.Pipe()
	go func() {
		enc := base64.NewEncoder(base64.StdEncoding, &lineWriter{w: pw})
		chunk := bytes.Repeat([]byte("%PDF-1.4 big attachment "), 4096)
		for left := size; left > 0; left -= len(chunk) {
			enc.Write(chunk[:min(len(chunk), left)]) //nolint:errcheck
		}
		enc.Close()
		pw.Close()
	}()
	b64 := int64((size + 2) / 3 * 4)
	b64 += b64 / 76 * 2
	return io.MultiReader(bytes.NewBufferString(head), pr, bytes.NewBufferString(tail)), int64(len(head)) + b64 + int64(len(tail))
}

// lineWriter breaks base64 into 76-character lines.
type lineWriter struct {
	w   io.Writer
	col int
}

func (l *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(76-l.col, len(p))
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
		p, l.col = p[k:], l.col+k
		if l.col == 76 {
			if _, err := l.w.Write([]byte("\r\n")); err != nil {
				return 0, err
			}
			l.col = 0
		}
	}
	return n, nil
}

func (l *lineWriter) Close() error { return nil }

// A 64 MB attachment streams through: the client's heap stays far below
// its size (a quarter of it at most; a few MiB are seen).
func TestLargeAttachmentStreams(t *testing.T) {
	// Serial: it measures the process's heap, which other tests would add to.
	if testing.Short() {
		t.Skip("64 MB through Dovecot")
	}
	d := imaptest.StartDovecot(t, map[string]string{"alice": "secret"})
	const size = 64 << 20
	r, n := bigMail(size)
	if err := imaptest.AppendReader(context.Background(), d.Addr, "alice", "secret", "INBOX", r, n); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	k := connect(t, config(t, d.Addr, nil), nil)
	sink := newSink()
	res := poll(t, k, docflow.MailCursor{}, sink)
	close(stop)
	if res.Ingested != 1 || sink.sizes[0] != size {
		t.Fatalf("poll = %+v, sizes %v", res, sink.sizes)
	}
	if p := peak.Load(); p > size/4 {
		t.Fatalf("heap peaked at %d MiB for a %d MB attachment", p>>20, size>>20)
	}
	t.Logf("heap peak %d MiB", peak.Load()>>20)
}
