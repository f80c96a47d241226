package imap_test

import (
	"context"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
)

// wakeWait bounds the waits for a wake-up: seconds on an idle machine,
// far more beside a loaded one.
const wakeWait = 2 * time.Minute

func TestDovecotIdleWakesOnNewMail(t *testing.T) {
	t.Parallel()
	d := imaptest.StartDovecot(t, map[string]string{"alice": "secret"})
	ctx := context.Background()
	news := make(chan struct{}, 16)
	k := connect(t, config(t, d.Addr, nil), func() {
		select {
		case news <- struct{}{}:
		default:
		}
	})
	if !k.CanIdle() {
		t.Fatal("Dovecot offers IDLE")
	}
	if err := k.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	att := imaptest.Attachment{Name: "a.pdf", Data: imaptest.PDF("idle", 500)}
	if err := imaptest.Append(ctx, d.Addr, "alice", "secret", "INBOX", imaptest.Mail("idle@x", "s", att)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-news:
	case <-time.After(wakeWait):
		t.Fatal("no EXISTS while idling")
	}
	sink := newSink()
	res := poll(t, k, docflow.MailCursor{}, sink)
	if res.Ingested != 1 || res.Cursor.UIDValidity == 0 {
		t.Fatalf("poll = %+v", res)
	}
	// Idle again, and a restarted server wakes the client too (the
	// connection closes) and the next poll reports a connection failure.
	if err := k.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	// Wake-ups heard so far (a further EXISTS during the poll) are not
	// the one awaited.
	for len(news) > 0 {
		<-news
	}
	d.Stop()
	// Dovecot's master takes its IMAP processes down some seconds after
	// it stops listening (7–10 s seen on a loaded machine). A wake-up
	// while the connection is still open is the server's news, not its
	// close: the test waits on for the one that comes with the close.
	deadline := time.After(wakeWait)
	for closed := false; !closed; {
		select {
		case <-news:
			closed = !k.Connected()
		case <-deadline:
			t.Fatalf("no wake-up on a closed connection within %v", wakeWait)
		}
	}
	if _, err := k.Poll(ctx, res.Cursor, sink, time.Second, nopLog); !imap.IsConnection(err) {
		t.Fatalf("poll on a dead connection = %v", err)
	}
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
}

func TestDovecotPollingAndWrongPassword(t *testing.T) {
	t.Parallel()
	d := imaptest.StartDovecot(t, map[string]string{"alice": "secret"})
	ctx := context.Background()
	var mails [][]byte
	for i := 0; i < 20; i++ {
		mails = append(mails, imaptest.Mail("", "no id", imaptest.Attachment{Name: "a.pdf", Data: imaptest.PDF(string(rune('a'+i)), 300)}))
	}
	if err := imaptest.Append(ctx, d.Addr, "alice", "secret", "INBOX", mails...); err != nil {
		t.Fatal(err)
	}
	k := connect(t, config(t, d.Addr, nil), nil)
	sink := newSink()
	res := poll(t, k, docflow.MailCursor{}, sink)
	if res.Ingested != 20 || res.Cursor.LastUID != 20 {
		t.Fatalf("poll = %+v", res)
	}
	bad := config(t, d.Addr, nil)
	bad.Password = "wrong"
	b, _ := imap.New(bad, nil)
	err := b.Connect(ctx)
	if err == nil || imap.IsConnection(err) {
		t.Fatalf("wrong password = %v", err)
	}
	t.Logf("server's reason: %v", err)
}
