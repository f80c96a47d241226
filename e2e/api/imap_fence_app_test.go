package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"testing"
	"time"

	"docflow/actors/sources"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// TestSourceStopsBeforeTheAnswer: with the API and the worker running the
// IMAP sources as two processes (one database, nothing else shared) and a
// real Dovecot, a change answered by the API has stopped the source it
// changed: a mail appended right after the answer to deactivate, to
// change the credentials or to delete is never taken in by the source
// started before. The worker hears of the change only at its next scan
// (every 3 s here), while the running source is woken by the new mail at
// once: only storage's fence stops it. A deactivated source's mail stays
// unseen, and the source takes it in once active again.
func TestSourceStopsBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	d := imaptest.StartDovecot(t, map[string]string{"alice": "alice-pw", "bob": "bob-pw"})
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "fence")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	env := map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}
	// Cleanups run in reverse: both processes close before the database
	// is dropped. Only the worker runs sources.
	api := apptest.New(t, apptest.Options{Role: "api", DB: db, NoRelay: true, Env: env})
	apptest.New(t, apptest.Options{Role: "worker", DB: db, NoRelay: true, Env: env,
		Sources: func(c *sources.Config) { c.Scan, c.LeaseTTL = 3*time.Second, 15*time.Second }})
	c := newClient(t, api.URL)

	ingested := func(subject string) bool {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE source='email' AND ai_metadata->'email'->>'subject'=$1`,
			subject).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	appendMail := func(user, subject string) {
		t.Helper()
		m := imaptest.Mail(subject+"@x", subject, imaptest.Attachment{Name: subject + ".pdf", ContentType: "application/pdf", Data: imaptest.PDF(subject, 500)})
		if err := imaptest.Append(ctx, d.Addr, user, user+"-pw", "INBOX", m); err != nil {
			t.Fatal(err)
		}
	}
	unseen := func(user string) uint32 {
		t.Helper()
		_, n, err := imaptest.Count(d.Addr, user, user+"-pw", "INBOX")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// idling waits until the source took subject in and idles again, woken
	// only by new mail.
	idling := func(subject string) {
		t.Helper()
		testsupport.WaitFor(t, 3*time.Minute, subject+" taken in", func() bool { return ingested(subject) })
		time.Sleep(500 * time.Millisecond)
	}
	// neverTaken checks, after the worker's next scans, that subject was
	// not taken in and is still unseen.
	neverTaken := func(user, subject string) {
		t.Helper()
		time.Sleep(5 * time.Second)
		if ingested(subject) {
			t.Fatalf("%s, appended after the answer, was taken in", subject)
		}
		if n := unseen(user); n != 1 {
			t.Fatalf("%s's mailbox has %d unseen mails, want 1 (%s)", user, n, subject)
		}
	}

	host, port, _ := net.SplitHostPort(d.Addr)
	body := c.must(201, "POST", "/api/integrations/", fmt.Sprintf(`{"direction": "SOURCE", "integration_type": "IMAP", "name": "Scans",
		"config": {"host": %q, "port": %s, "security": "none", "poll_interval": 10},
		"credentials": {"username": "alice", "password": "alice-pw"}}`, host, port))
	var in struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(body), &in); err != nil || in.ID == 0 {
		t.Fatalf("create: %s", body)
	}
	path := fmt.Sprintf("/api/integrations/%d", in.ID)
	appendMail("alice", "first")
	idling("first")

	// Deactivated.
	c.must(200, "PUT", path, `{"is_active": false}`)
	appendMail("alice", "after-deactivation")
	neverTaken("alice", "after-deactivation")
	// Active again, the source (a new one) takes the mail left.
	c.must(200, "PUT", path, `{"is_active": true}`)
	idling("after-deactivation")

	// Credentials changed: the source started as alice takes nothing more
	// of alice's; the one started as bob takes bob's.
	c.must(200, "PUT", path, `{"credentials": {"username": "bob", "password": "bob-pw"}}`)
	appendMail("alice", "after-credentials")
	neverTaken("alice", "after-credentials")
	appendMail("bob", "bobs")
	idling("bobs")

	// Deleted.
	c.must(204, "DELETE", path, nil)
	appendMail("bob", "after-delete")
	neverTaken("bob", "after-delete")
}
