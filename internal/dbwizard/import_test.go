package dbwizard

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/blob"
	"docflow/storage/legacy/legacytest"
	"docflow/storage/postgres"
)

// newWizard returns a wizard on a fresh docflow database.
func newWizard(t *testing.T, cfg Config) (*Wizard, *postgres.DB) {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "wizard")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cfg.DB, cfg.Jobs, cfg.Log = db, postgres.NewMigrationJobStore(db), zerolog.Nop()
	if cfg.Blobs == nil {
		bs, err := blob.Open(t.TempDir(), blob.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bs.Close() })
		cfg.Blobs = bs
	}
	w := New(cfg)
	t.Cleanup(w.Close)
	return w, db
}

// legacyFile builds a SQLite file in the original's schema and returns
// its URL.
func legacyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docuelevate.db")
	if err := legacytest.Build(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	return "sqlite:///" + strings.TrimPrefix(path, "/")
}

// waitJob waits until job id has ended and returns it.
func waitJob(t *testing.T, w *Wizard, id int64) *docflow.MigrationJob {
	t.Helper()
	var job *docflow.MigrationJob
	testsupport.WaitFor(t, 60*time.Second, "the migration job to end", func() bool {
		j, err := w.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		job = j
		return j.Status != docflow.MigrationRunning
	})
	return job
}

func count(t *testing.T, db *postgres.DB, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// importedCounts are the rows the seed leaves in each docflow table.
var importedCounts = map[string]int64{
	"local_users": 2, "user_profiles": 2, "pipeline_steps": 2 + 8, "files": 5, "processing_logs": 2,
	"routing_rules": 1, "classification_rules": 1, "api_tokens": 2, "saved_searches": 1, "comments": 2,
	"annotations": 1, "shares": 1, "webhooks": 1, "integrations": 2,
}

func checkImported(t *testing.T, db *postgres.DB) {
	t.Helper()
	for table, want := range importedCounts {
		if got := count(t, db, `SELECT count(*) FROM `+table); got != want {
			t.Errorf("%s: %d rows, want %d", table, got, want)
		}
	}
}

func TestImportOriginalSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, db := newWizard(t, Config{})
	url := legacyFile(t)

	test, err := w.Test(ctx, url)
	if err != nil || !test.Success || test.ServerVersion == "" || test.Backend != docflow.BackendSQLite {
		t.Fatalf("test-connection: %+v, %v", test, err)
	}
	pv, err := w.Preview(ctx, url)
	if err != nil || !pv.Success || pv.Kind != docflow.MigrationImport || pv.TotalRows == 0 {
		t.Fatalf("preview: %+v, %v", pv, err)
	}

	started, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, w, started.ID)
	if job.Status != docflow.MigrationCompleted || job.Kind != docflow.MigrationImport {
		t.Fatalf("job: %+v", job)
	}
	checkImported(t, db)

	// Users keep their profile's tier and language; pipelines keep their
	// steps; the system pipeline stays docflow's default.
	if n := count(t, db, `SELECT count(*) FROM user_profiles WHERE user_id='alice@example.com' AND subscription_tier='power' AND preferred_language='de'`); n != 1 {
		t.Error("alice's profile not mapped")
	}
	if n := count(t, db, `SELECT count(*) FROM pipelines WHERE owner_id IS NULL AND is_default AND name=$1`, docflow.StandardPipelineName); n != 1 {
		t.Error("docflow's default pipeline is no longer the default")
	}
	if n := count(t, db, `SELECT count(*) FROM pipeline_steps s JOIN pipelines p ON p.id=s.pipeline_id
		WHERE p.name='Invoices' AND s.step_type IN ('ocr','extract_metadata') AND (s.step_type <> 'ocr' OR s.config = '{"ocr_language": "deu"}')`); n != 2 {
		t.Errorf("Invoices steps: %d", n)
	}
	// The duplicate points at the imported original; an unreadable AI
	// metadata became empty.
	if n := count(t, db, `SELECT count(*) FROM files d JOIN files o ON o.id = d.duplicate_of
		WHERE d.status='duplicate' AND o.original_filename='invoice.pdf' AND d.original_filename='invoice copy.pdf'`); n != 1 {
		t.Error("duplicate not linked to its original")
	}
	if n := count(t, db, `SELECT count(*) FROM files WHERE original_filename='invoice.pdf' AND status='completed'
		AND 'acme' = ANY(tags) AND ocr_quality_score = 91 AND pipeline_id IS NOT NULL`); n != 1 {
		t.Error("invoice.pdf not mapped")
	}
	// Replies keep their thread; annotations in percent became fractions.
	if n := count(t, db, `SELECT count(*) FROM comments c JOIN comments p ON p.id = c.parent_id WHERE c.body='Checked.' AND c.is_resolved`); n != 1 {
		t.Error("reply not linked")
	}
	if n := count(t, db, `SELECT count(*) FROM annotations WHERE abs(x - 0.1) < 1e-9 AND color = '#ff0000' AND annotation_type='highlight'`); n != 1 {
		t.Error("annotation not mapped")
	}
	// Issued tokens keep their hash, so they keep working.
	if n := count(t, db, `SELECT count(*) FROM api_tokens WHERE token_hash=$1 AND is_active AND owner_id='alice@example.com'`,
		legacytest.TokenHash(legacytest.AliceToken)); n != 1 {
		t.Error("alice's token not imported with its hash")
	}
	if n := count(t, db, `SELECT count(*) FROM webhooks WHERE events = '{document.processed}' AND secret='s3cret'`); n != 1 {
		t.Error("webhook not mapped")
	}
	if n := count(t, db, `SELECT count(*) FROM integrations WHERE NOT is_active AND credentials = ''`); n != 2 {
		t.Error("integrations not imported inactive without credentials")
	}
	// Completed documents were announced to the search indexer.
	if n := count(t, db, `SELECT count(*) FROM outbox WHERE convert_from(payload, 'UTF8') LIKE '%file.updated%'`); n < 3 {
		t.Errorf("%d file.updated events, want one for each of the 3 completed files", n)
	}

	// The report says what was left out, and why.
	report := map[string]bool{}
	for _, u := range job.Unmapped {
		report[u.Table+": "+u.Reason] = true
	}
	for _, want := range []string{
		"application_settings: " + legacyIgnoredReason("application_settings"),
		"subscription_plans: " + legacyIgnoredReason("subscription_plans"),
		"pipeline_steps: a step type docflow does not have",
		"processing_logs: not about a file (docflow keeps a log per file)",
		"webhook_configs: none of its events is one docflow delivers",
		"pipelines: imported as not the default: docflow's default pipeline stays the default",
	} {
		if !report[want] {
			t.Errorf("report lacks %q; it has %v", want, job.Unmapped)
		}
	}

	// The same source again takes nothing twice.
	again, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if j := waitJob(t, w, again.ID); j.Status != docflow.MigrationCompleted || again.ID == started.ID {
		t.Fatalf("second import: %+v", j)
	}
	checkImported(t, db)
}

func legacyIgnoredReason(table string) string {
	switch table {
	case "application_settings":
		return "settings are not imported (docflow's keys and encryption differ): set them again on /settings"
	case "subscription_plans":
		return "docflow's subscription tiers are fixed (free, starter, professional, power)"
	}
	return ""
}

func TestImportInterruptedResumes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var saves, stopAt atomic.Int64
	stopAt.Store(12)
	w, db := newWizard(t, Config{Batch: 1, AfterBatch: func(*docflow.MigrationJob) error {
		if n := saves.Add(1); stopAt.Load() > 0 && n >= stopAt.Load() {
			return errors.New("the process stopped")
		}
		return nil
	}})
	url := legacyFile(t)
	first, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	job := waitJob(t, w, first.ID)
	if job.Status != docflow.MigrationFailed {
		t.Fatalf("interrupted job: %+v", job)
	}
	partial := count(t, db, `SELECT count(*) FROM legacy_import_rows`)
	if partial == 0 || partial >= 30 {
		t.Fatalf("%d rows taken before the interruption", partial)
	}
	stopAt.Store(0)
	second, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID != first.ID {
		t.Fatalf("a new job %d instead of resuming %d", second.ID, first.ID)
	}
	if j := waitJob(t, w, second.ID); j.Status != docflow.MigrationCompleted {
		t.Fatalf("resumed job: %+v", j)
	}
	checkImported(t, db)
}

func TestImportRefusesAnotherSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, db := newWizard(t, Config{})
	path := filepath.Join(t.TempDir(), "other.db")
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	other.Close()
	_, err = w.Start(ctx, docflow.MigrationRequest{SourceURL: "sqlite://" + path})
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "not the original service's database") {
		t.Fatalf("another schema: %v", err)
	}
	// A file that is no database at all.
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := writeFile(junk, "this is not a database, just text that is long enough to have a header"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: "sqlite://" + junk}); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("not a database: %v", err)
	}
	if n := count(t, db, `SELECT count(*) FROM legacy_import_rows`) + count(t, db, `SELECT count(*) FROM db_migration_jobs`); n != 0 {
		t.Fatalf("%d rows written for a refused import", n)
	}
}

func TestConnectionFailuresAreAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, _ := newWizard(t, Config{})
	res, err := w.Test(ctx, "postgres://docflow:wrong@127.0.0.1:1/docflow?sslmode=disable")
	if err != nil || res.Success || !strings.Contains(res.Message, "could not connect") {
		t.Fatalf("unreachable: %+v, %v", res, err)
	}
	res, err = w.Test(ctx, strings.Replace(postgres.TestServerURL(), "/postgres?", "/no_such_database_here?", 1))
	if err != nil || res.Success || !strings.Contains(res.Message, "does not exist") {
		t.Fatalf("missing database: %+v, %v", res, err)
	}
	if wrong, right, ok := passwordURLs(t); ok {
		res, err = w.Test(ctx, wrong)
		if err != nil || res.Success || !strings.Contains(res.Message, "authentication failed") || strings.Contains(res.Message, "wrong-password") {
			t.Fatalf("wrong password: %+v, %v", res, err)
		}
		if res, err = w.Test(ctx, right); err != nil || !res.Success {
			t.Fatalf("right password: %+v, %v", res, err)
		}
	}
	res, err = w.Test(ctx, "sqlite:///no/such/file.db")
	if err != nil || res.Success || !strings.Contains(res.Message, "no file") {
		t.Fatalf("missing file: %+v, %v", res, err)
	}
	if _, err := w.Test(ctx, "mysql://x@y/z"); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("unknown backend: %v", err)
	}
	if _, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: "postgres://x:y@127.0.0.1:1/docuelevate?sslmode=disable"}); docflow.ErrorCode(err) != docflow.EUNAVAILABLE {
		t.Fatalf("unreachable source: %v", err)
	}
}

// passwordURLs are URLs of the test server's database postgres as the
// role whose password it checks (scripts/pgtest.sh), with a wrong and the
// right password; ok is false (and the test says why) when the server
// lets the role in with any password.
func passwordURLs(t *testing.T) (wrong, right string, ok bool) {
	t.Helper()
	ctx := context.Background()
	const role, password = "docflow_password_test", "docflow-right-password"
	conn, err := pgx.Connect(ctx, postgres.TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DO $$ BEGIN
		CREATE ROLE docflow_password_test LOGIN PASSWORD 'docflow-right-password';
	EXCEPTION WHEN duplicate_object THEN NULL; END $$`); err != nil {
		t.Fatal(err)
	}
	cfg := conn.Config()
	url := func(pw string) string {
		return fmt.Sprintf("postgres://%s:%s@%s:%d/postgres?sslmode=disable", role, pw, cfg.Host, cfg.Port)
	}
	probe, err := pgx.Connect(ctx, url("wrong-password"))
	if err == nil {
		probe.Close(ctx)
		t.Logf("the test server lets %s in with any password (no scram-sha-256 rule for it in pg_hba.conf, which scripts/pgtest.sh adds): a wrong password is not tried", role)
		return "", "", false
	}
	return url("wrong-password"), url(password), true
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }

// The original's database on PostgreSQL imports as its SQLite file does.
func TestImportOriginalPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w, db := newWizard(t, Config{})
	url := emptyDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := conn.Exec(ctx, legacytest.Dollar(q), args...)
		return err
	}
	for _, s := range legacytest.Schema(legacytest.Postgres) {
		if err := exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := legacytest.Seed(ctx, exec); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	pv, err := w.Preview(ctx, url)
	if err != nil || pv.Kind != docflow.MigrationImport {
		t.Fatalf("preview: %+v, %v", pv, err)
	}
	started, err := w.Start(ctx, docflow.MigrationRequest{SourceURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if job := waitJob(t, w, started.ID); job.Status != docflow.MigrationCompleted {
		t.Fatalf("job: %+v", job)
	}
	checkImported(t, db)
}
