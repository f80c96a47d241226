package imap_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
)

// cutProxy forwards to target and, while cut is set, closes each
// connection once the server has sent limit bytes.
func cutProxy(t *testing.T, target string, limit int64, cut *atomic.Bool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(s, c); s.Close() }() //nolint:errcheck
			go func() {
				if cut.Load() {
					io.CopyN(c, s, limit) //nolint:errcheck
				} else {
					io.Copy(c, s) //nolint:errcheck
				}
				c.Close()
				s.Close()
			}()
		}
	}()
	return ln.Addr().String()
}

func TestServerDroppingTheConnectionMidFetch(t *testing.T) {
	t.Parallel()
	addr := imaptest.MemServer(t, "alice", "secret", false)
	big := imaptest.Attachment{Name: "big.pdf", ContentType: "application/pdf", Data: imaptest.PDF("big", 300<<10)}
	if err := imaptest.Append(context.Background(), addr, "alice", "secret", "INBOX", imaptest.Mail("big@x", "big", big)); err != nil {
		t.Fatal(err)
	}
	var cut atomic.Bool
	cut.Store(true)
	proxy := cutProxy(t, addr, 100<<10, &cut) // the mail is about 400 KB in base64
	cfg := config(t, proxy, nil)
	k := connect(t, cfg, nil)
	sink := newSink()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := k.Poll(ctx, docflow.MailCursor{}, sink, time.Minute, nopLog)
	if !imap.IsConnection(err) || res.Cursor.LastUID != 0 || len(sink.done) != 0 || len(sink.files) != 0 {
		t.Fatalf("poll = %+v, %v; done %v files %v", res, err, sink.done, sink.files)
	}
	k.Close(ctx) //nolint:errcheck
	cut.Store(false)
	k2 := connect(t, cfg, nil)
	if res := poll(t, k2, res.Cursor, sink); res.Ingested != 1 || sink.sizes[0] != int64(len(big.Data)) {
		t.Fatalf("after reconnect: %+v, sizes %v", res, sink.sizes)
	}
}
