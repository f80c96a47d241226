package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

func sourceFixture(t *testing.T, db *postgres.DB) (*postgres.SourceStore, *docflow.Integration) {
	t.Helper()
	c, err := postgres.NewCipher("0123456789abcdef0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	ss := postgres.NewSourceStore(db, c)
	in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionSource, IntegrationType: "IMAP", Name: "box",
		Config: map[string]any{"host": "h"}, Credentials: map[string]string{"username": "u", "password": "p"}, IsActive: true}
	if err := ss.AddSourceFixture(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	return ss, in
}

// One attachment of one mail is recorded once, on both ingest paths and
// under concurrency: every other record of it fails with ECONFLICT and
// writes nothing; a deleted integration gives ENOTFOUND.
func TestIngestMailAttachmentExactlyOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	ss, in := sourceFixture(t, db)
	seen := docflow.MailSeen{IntegrationID: in.ID, MessageKey: "<m@x>", Attachment: 0, Generation: 1}
	rec := func(hash, owner string, limit int) docflow.IngestRecord {
		id, err := s.NewFileID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := seen
		return docflow.IngestRecord{ID: id, File: newFile(hash, owner), Dedup: true, DailyLimit: limit, Mail: &m}
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner, limit := "", 0
			if i%2 == 1 {
				owner, limit = "ann", 100 // the transactional path
			}
			_, errs[i] = s.Ingest(ctx, rec(fmt.Sprintf("h%d", i), owner, limit))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch docflow.ErrorCode(err) {
		case "":
			ok++
		case docflow.ECONFLICT:
		default:
			t.Fatalf("ingest: %v", err)
		}
	}
	var files int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM files`).Scan(&files); err != nil {
		t.Fatal(err)
	}
	if ok != 1 || files != 1 {
		t.Fatalf("%d ingests succeeded, %d files", ok, files)
	}
	done, atts, err := ss.MailSeen(ctx, in.ID, "<m@x>")
	if err != nil || done || len(atts) != 1 || atts[0] != 0 {
		t.Fatalf("seen = %v %v %v", done, atts, err)
	}
	if err := ss.MailsDone(ctx, in.ID, 1, []string{"<m@x>", "<n@x>"}); err != nil {
		t.Fatal(err)
	}
	if err := ss.MailsDone(ctx, in.ID, 1, []string{"<m@x>"}); err != nil {
		t.Fatal(err)
	}
	if done, _, _ := ss.MailSeen(ctx, in.ID, "<n@x>"); !done {
		t.Fatal("mail not finished")
	}
	if err := ss.UpdateSourceFixture(ctx, in, true); err != nil {
		t.Fatal(err)
	}
	seen.MessageKey = "<other@x>"
	if _, err := s.Ingest(ctx, rec("gone", "", 0)); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("ingest for a deleted integration = %v", err)
	}
}

// elapse moves every time the source leases are judged by (the leases'
// ends, the worker stamps, the sources' creation) d into the past, as if
// d had passed: the lease tests run on long leases and pass time this way,
// so no claim outlasts a lease by accident however slow the machine is.
func elapse(t *testing.T, db *postgres.DB, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	ms := d.Milliseconds()
	if _, err := db.Pool.Exec(ctx, `UPDATE source_workers SET seen_at = seen_at - make_interval(secs => $1::float8 / 1000)`, ms); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE integrations SET lease_expires_at = lease_expires_at - make_interval(secs => $1::float8 / 1000),
		created_at = created_at - make_interval(secs => $1::float8 / 1000)`, ms); err != nil {
		t.Fatal(err)
	}
}

// leaseTTL is the lease of the lease tests: long beside any pause of a
// loaded machine; the tests pass it with elapse.
const leaseTTL = time.Hour

// A source is leased to one owner at a time; the lease passes on expiry,
// the credentials come back decrypted, and a report needs the lease.
func TestSourceLeases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openFiles(t)
	ss, in := sourceFixture(t, db)
	a, err := ss.ClaimSources(ctx, "a", leaseTTL)
	if err != nil || len(a) != 1 || a[0].Integration.Credentials["password"] != "p" || a[0].Integration.Config["host"] != "h" {
		t.Fatalf("claim a = %+v, %v", a, err)
	}
	if b, err := ss.ClaimSources(ctx, "b", leaseTTL); err != nil || len(b) != 0 {
		t.Fatalf("b took a's lease: %+v, %v", b, err)
	}
	if err := ss.SaveSourceReport(ctx, in.ID, "b", docflow.SourceReport{Generation: a[0].Generation}); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("report without the lease = %v", err)
	}
	st := docflow.IntegrationStatus{State: "connected", MessagesSeen: 3}
	if err := ss.SaveSourceReport(ctx, in.ID, "a", docflow.SourceReport{Status: st, Cursor: docflow.MailCursor{UIDValidity: 7, LastUID: 9}, LastError: "x", Generation: a[0].Generation}); err != nil {
		t.Fatal(err)
	}
	// Just before a's lease ends, it still holds; just after, b takes it.
	elapse(t, db, leaseTTL-leaseTTL/10)
	if b, err := ss.ClaimSources(ctx, "b", leaseTTL); err != nil || len(b) != 0 {
		t.Fatalf("b took a's lease before its end: %+v, %v", b, err)
	}
	elapse(t, db, leaseTTL/5)
	b, err := ss.ClaimSources(ctx, "b", leaseTTL)
	if err != nil || len(b) != 1 || b[0].Cursor.LastUID != 9 || b[0].Integration.Status.MessagesSeen != 3 {
		t.Fatalf("b after expiry = %+v, %v", b, err)
	}
	if a, _ := ss.ClaimSources(ctx, "a", leaseTTL); len(a) != 0 {
		t.Fatal("a still holds the lease")
	}
	if err := ss.ReleaseSources(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	in.IsActive = false
	if err := ss.UpdateSourceFixture(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	if a, _ := ss.ClaimSources(ctx, "a", leaseTTL); len(a) != 0 {
		t.Fatal("an inactive source was leased")
	}
}

// Live workers share the sources: a worker alone takes all, a second one
// makes the first give up half, a worker that leaves hands its half over at
// once, and one that dies hands it over when its lease and stamp expire.
func TestSourceLeasesFairShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, _ := openFiles(t)
	ss, _ := sourceFixture(t, db)
	for i := 1; i < 10; i++ {
		in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionSource, IntegrationType: "IMAP", Name: fmt.Sprint("box", i),
			Config: map[string]any{"host": "h"}, IsActive: true}
		if err := ss.AddSourceFixture(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	const ttl = leaseTTL
	claims := func(owner string) int {
		t.Helper()
		got, err := ss.ClaimSources(ctx, owner, ttl)
		if err != nil {
			t.Fatalf("%s claims: %v", owner, err)
		}
		return len(got)
	}
	claim := func(owner string, want int) {
		t.Helper()
		if n := claims(owner); n != want {
			t.Fatalf("%s holds %d sources, want %d", owner, n, want)
		}
	}
	claim("a", 10)
	claim("b", 0) // nothing free yet; b is counted from now on
	claim("a", 5) // a gives up its share's excess
	claim("b", 5)
	claim("a", 5)
	claim("b", 5)
	if err := ss.ReleaseSources(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	claim("a", 10)
	claim("b", 0)
	claim("a", 5)
	claim("b", 5)
	// b dies: its stamp and leases expire together. Half a ttl on, b
	// still counts and holds its half.
	elapse(t, db, ttl/2)
	claim("a", 5)
	elapse(t, db, ttl/2+ttl/10)
	claim("a", 10)

	// A worker that stamps itself but takes nothing (stalled scans) makes
	// the shares too small to cover every source: the ones left free for a
	// whole ttl are taken anyway.
	stamp := func() {
		if _, err := db.Pool.Exec(ctx, `INSERT INTO source_workers (owner) VALUES ('c')
			ON CONFLICT (owner) DO UPDATE SET seen_at = now()`); err != nil {
			t.Fatal(err)
		}
	}
	claim("b", 0)
	stamp()
	// The sources a gives up are free from its next claim on: the whole
	// ttl is counted from it.
	claim("a", 4) // share 4 among a, b and c
	claim("b", 4)
	// a, b and c stay alive, claiming and stamping every tenth of a ttl;
	// the two free sources are taken once a whole ttl has passed, not
	// before.
	for i := 1; i < 10; i++ {
		elapse(t, db, ttl/10)
		stamp()
		if a, b := claims("a"), claims("b"); a != 4 || b != 4 {
			t.Fatalf("a holds %d, b %d after %d tenths of a ttl: free sources taken before a whole ttl", a, b, i)
		}
	}
	elapse(t, db, ttl/5)
	stamp()
	if a, b := claims("a"), claims("b"); a+b != 10 {
		t.Fatalf("a holds %d, b %d after 1.1 ttl: the free sources were not taken", a, b)
	}
}
