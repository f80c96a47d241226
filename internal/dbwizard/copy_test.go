package dbwizard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/storage/postgres"
)

// emptyDatabase creates a database with nothing in it on the test server
// and returns its URL; the test's cleanup drops it.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	b := make([]byte, 6)
	rand.Read(b) //nolint:errcheck
	name := "docflow_test_copy_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, postgres.TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), postgres.TestServerURL())
		if err == nil {
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck
			c.Close(context.Background())
		}
	})
	return strings.Replace(postgres.TestServerURL(), "/postgres?", "/"+name+"?", 1)
}

// tableDigests returns each table's rows as one digest, by table, in a
// database at url (the wizard's own bookkeeping aside).
func tableDigests(t *testing.T, url string) map[string]string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname='public'
		AND tablename NOT IN ('schema_migrations', 'db_migration_jobs', 'docflow_copy_progress')`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		var d string
		// Rows as text, sorted: the same rows give the same digest.
		if err := c.QueryRow(ctx, `SELECT count(*) || ':' || coalesce(md5(string_agg(r, E'\n' ORDER BY r)), '')
			FROM (SELECT t::text AS r FROM public.`+pgx.Identifier{n}.Sanitize()+` t) x`).Scan(&d); err != nil {
			t.Fatalf("digest %s: %v", n, err)
		}
		out[n] = d
	}
	return out
}

func TestCopyToAnotherPostgresResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var saves, stopAt atomic.Int64
	w, db := newWizard(t, Config{Batch: 2, AfterBatch: func(*docflow.MigrationJob) error {
		if n := saves.Add(1); stopAt.Load() > 0 && n >= stopAt.Load() {
			return errors.New("the process stopped")
		}
		return nil
	}})
	// Content to copy: the original's database imported first.
	imp, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: legacyFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, w, imp.ID); j.Status != docflow.MigrationCompleted {
		t.Fatalf("import: %+v", j)
	}
	target := emptyDatabase(t)
	pv, err := w.Preview(ctx, db.URL)
	if err != nil || pv.Kind != docflow.MigrationCopy {
		t.Fatalf("preview of docflow's own database: %+v, %v", pv, err)
	}

	saves.Store(0)
	stopAt.Store(25)
	first, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: "", TargetURL: target})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, w, first.ID); j.Status != docflow.MigrationFailed || j.RowsCopied == 0 {
		t.Fatalf("interrupted copy: %+v", j)
	}
	stopAt.Store(0)
	second, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: db.URL, TargetURL: target})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID {
		t.Fatalf("a new job %d instead of resuming %d", second.ID, first.ID)
	}
	job := waitJob(t, w, second.ID)
	if job.Status != docflow.MigrationCompleted || job.TablesCopied != len(job.Tables) {
		t.Fatalf("resumed copy: %+v", job)
	}
	src, dst := tableDigests(t, db.URL), tableDigests(t, target)
	for name, d := range src {
		if dst[name] != d {
			t.Errorf("table %s: source %s, copy %s", name, d, dst[name])
		}
	}
	if len(dst) != len(src) {
		t.Errorf("%d tables in the copy, %d in the source", len(dst), len(src))
	}
	// The copy hands out ids after the copied ones.
	c, err := pgx.Connect(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var next, maxID int64
	if err := c.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence('files', 'id')), (SELECT max(id) FROM files)`).Scan(&next, &maxID); err != nil {
		t.Fatal(err)
	}
	if next <= maxID {
		t.Errorf("next file id %d, copied ids up to %d", next, maxID)
	}
}

func TestCopyRefusesDocflowsOwnDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, db := newWizard(t, Config{})
	// The same database under another host name is still docflow's own.
	for _, target := range []string{db.URL, strings.Replace(db.URL, "127.0.0.1", "localhost", 1)} {
		_, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: "", TargetURL: target})
		if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "database docflow runs on") {
			t.Errorf("copy into %s: %v", target, err)
		}
	}
	// A target that is not empty is refused, and left as it was.
	other, cleanup, err := postgres.OpenTestDB(ctx, "wizard_other")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if _, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: "", TargetURL: other.URL}); docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "not empty") {
		t.Errorf("copy into a database in use: %v", err)
	}
}
