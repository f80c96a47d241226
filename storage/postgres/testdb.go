package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestServerURL is the server tests create throwaway databases on
// (DOCFLOW_TEST_DATABASE_URL overrides; it names the maintenance database).
func TestServerURL() string {
	if u := os.Getenv("DOCFLOW_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// OpenTestDB creates a fresh, migrated database named after prefix and
// returns it with a cleanup func that drops it. For tests of any package.
//
// The database is a copy of a template migrated once per set of
// migrations (templateDB), so a test pays for a file copy, not for
// applying every migration.
func OpenTestDB(ctx context.Context, prefix string) (*DB, func(), error) {
	tmpl, err := templateDB(ctx)
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, 6)
	rand.Read(b) //nolint:errcheck
	name := fmt.Sprintf("docflow_test_%s_%s", prefix, hex.EncodeToString(b))
	if err := adminExec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tmpl}.Sanitize()); err != nil {
		return nil, nil, fmt.Errorf("create test database: %w", err)
	}
	drop := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		adminExec(cctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)") //nolint:errcheck // a test's cleanup
	}
	db, err := Open(ctx, testDSN(name), 20)
	if err != nil {
		drop()
		return nil, nil, err
	}
	return db, func() { db.Close(); drop() }, nil
}

// testDSN is the URL of database name on the test server.
func testDSN(name string) string {
	cfg, err := pgx.ParseConfig(TestServerURL())
	if err != nil {
		return ""
	}
	if cfg.Password != "" {
		return fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
}

// adminExec runs one statement on the test server's maintenance database.
func adminExec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, TestServerURL())
	if err != nil {
		return fmt.Errorf("connect test server: %w", err)
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// templateLock is the advisory lock (on the maintenance database) under
// which one process at a time builds a template.
const templateLock = 7_245_002

// keepTemplates is how many templates of other migration sets are kept:
// checkouts of other branches on the same server use theirs.
const keepTemplates = 8

var tmplOnce struct {
	sync.Mutex
	name string
}

// templateDB returns the name of a database migrated with the embedded
// migrations and marked as a template, building it the first time any
// process asks for this set of migrations (named after their hash, so a
// changed or added migration gets a template of its own). A template is
// only ever used once it is complete: it is marked IS_TEMPLATE after its
// migrations, and an unmarked one left by a killed process is rebuilt.
func templateDB(ctx context.Context) (string, error) {
	tmplOnce.Lock()
	defer tmplOnce.Unlock()
	if tmplOnce.name != "" {
		return tmplOnce.name, nil
	}
	name, err := migrationsName()
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, TestServerURL())
	if err != nil {
		return "", fmt.Errorf("connect test server: %w (is PostgreSQL running? `make test` starts it)", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLock); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", templateLock) //nolint:errcheck
	var ready bool
	err = conn.QueryRow(ctx, "SELECT coalesce((SELECT datistemplate FROM pg_database WHERE datname=$1), false)", name).Scan(&ready)
	if err != nil {
		return "", err
	}
	if !ready {
		id := pgx.Identifier{name}.Sanitize()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)"); err != nil {
			return "", err
		}
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+id); err != nil {
			return "", err
		}
		db, err := Open(ctx, testDSN(name), 2)
		if err != nil {
			return "", fmt.Errorf("migrate template: %w", err)
		}
		db.Close()
		// No connections from now on: a database being copied must have none.
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+id+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
			return "", err
		}
		pruneTemplates(ctx, conn, name)
	}
	tmplOnce.name = name
	return name, nil
}

// pruneTemplates drops all but the newest keepTemplates templates of
// other migration sets.
func pruneTemplates(ctx context.Context, conn *pgx.Conn, current string) {
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database
		WHERE datistemplate AND datname LIKE 'docflow_tmpl_%' AND datname <> $1 ORDER BY oid DESC OFFSET $2`, current, keepTemplates)
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, n := range names {
		id := pgx.Identifier{n}.Sanitize()
		conn.Exec(ctx, "ALTER DATABASE "+id+" WITH IS_TEMPLATE false") //nolint:errcheck // best effort
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)")  //nolint:errcheck // best effort
	}
}

// migrationsName names the template of the embedded migrations: a hash
// of their names and contents.
func migrationsName() (string, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return "", err
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		b, err := migrationFS.ReadFile(n)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return "docflow_tmpl_" + hex.EncodeToString(h.Sum(nil))[:16], nil
}
