package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// A source's records are refused once its integration changed: every
// change of config, credentials or active flag moves the generation in its
// own transaction, and a mail attachment or a finished mail recorded under
// an older generation fails (ENOTFOUND) and writes nothing, on both ingest
// paths; a name change moves nothing. A change waits for a record under
// way, so nothing is recorded under the old settings after its commit.
func TestMailSeenFencedBySettingsGeneration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s := openFiles(t)
	ss, in := sourceFixture(t, db)
	generation := func() int64 {
		t.Helper()
		var g int64
		if err := db.Pool.QueryRow(ctx, `SELECT generation FROM integrations WHERE id=$1`, in.ID).Scan(&g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	claims, err := ss.ClaimSources(ctx, "w", time.Minute)
	if err != nil || len(claims) != 1 {
		t.Fatalf("claim = %+v, %v", claims, err)
	}
	g1 := claims[0].Generation
	if g1 != generation() {
		t.Fatalf("claim's generation %d, row's %d", g1, generation())
	}
	n := 0
	ingest := func(gen int64, owner string, limit int) error {
		t.Helper()
		n++
		id, err := s.NewFileID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		hash := "fence" + strings.Repeat("x", n)
		_, err = s.Ingest(ctx, docflow.IngestRecord{ID: id, File: newFile(hash, owner), Dedup: true, DailyLimit: limit,
			Mail: &docflow.MailSeen{IntegrationID: in.ID, MessageKey: "<" + hash + "@x>", Generation: gen}})
		return err
	}
	counts := func() (files, seen int) {
		t.Helper()
		if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM integration_mail_seen)`).
			Scan(&files, &seen); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := ingest(g1, "", 0); err != nil {
		t.Fatal(err)
	}

	// A name change leaves the generation; a config change moves it.
	if _, err := db.Pool.Exec(ctx, `UPDATE integrations SET name='renamed' WHERE id=$1`, in.ID); err != nil {
		t.Fatal(err)
	}
	if generation() != g1 {
		t.Fatal("a name change moved the generation")
	}
	in.Config = map[string]any{"host": "h2"}
	if err := ss.UpdateSourceFixture(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	g2 := generation()
	if g2 == g1 {
		t.Fatal("a config change left the generation")
	}
	files, seen := counts()
	for _, path := range []struct {
		owner string
		limit int
	}{{"", 0}, {"ann", 100}} { // the batch path and the transactional one
		if err := ingest(g1, path.owner, path.limit); docflow.ErrorCode(err) != docflow.ENOTFOUND {
			t.Fatalf("ingest under an old generation (%q) = %v", path.owner, err)
		}
	}
	if err := ss.MailsDone(ctx, in.ID, g1, []string{"<old@x>"}); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("mails done under an old generation = %v", err)
	}
	if err := ss.SaveSourceReport(ctx, in.ID, "w", docflow.SourceReport{LastError: "stale", Generation: g1}); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("report under an old generation = %v", err)
	}
	if f, m := counts(); f != files || m != seen {
		t.Fatalf("refused records wrote: files %d→%d, seen %d→%d", files, f, seen, m)
	}
	if err := ingest(g2, "ann", 100); err != nil {
		t.Fatalf("ingest under the current generation: %v", err)
	}

	// Credentials and the active flag move it too; inactive refuses every
	// generation.
	if _, err := db.Pool.Exec(ctx, `UPDATE integrations SET credentials='other' WHERE id=$1`, in.ID); err != nil {
		t.Fatal(err)
	}
	g3 := generation()
	if g3 == g2 {
		t.Fatal("a credentials change left the generation")
	}
	in.IsActive = false
	if err := ss.UpdateSourceFixture(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	g4 := generation()
	if g4 == g3 {
		t.Fatal("deactivation left the generation")
	}
	for _, g := range []int64{g3, g4} {
		if err := ingest(g, "", 0); docflow.ErrorCode(err) != docflow.ENOTFOUND {
			t.Fatalf("ingest into an inactive integration (generation %d) = %v", g, err)
		}
	}

	// A record under way holds the change back until it commits.
	in.IsActive = true
	if err := ss.UpdateSourceFixture(ctx, in, false); err != nil {
		t.Fatal(err)
	}
	g5 := generation()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `INSERT INTO integration_mail_seen (integration_id, message_key, attachment, generation)
		VALUES ($1, '<under-way@x>', -1, $2)`, in.ID, g5); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET lock_timeout = '200ms'`); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `UPDATE integrations SET is_active=false WHERE id=$1`, in.ID)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" {
		t.Fatalf("deactivation while a record is under way = %v (want a lock wait)", err)
	}
	if _, err := conn.Exec(ctx, `RESET lock_timeout`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `UPDATE integrations SET is_active=false WHERE id=$1`, in.ID); err != nil {
		t.Fatal(err)
	}
	if done, _, _ := ss.MailSeen(ctx, in.ID, "<under-way@x>"); !done {
		t.Fatal("the record committed before the change is lost")
	}
}
