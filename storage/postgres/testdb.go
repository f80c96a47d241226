package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
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
func OpenTestDB(ctx context.Context, prefix string) (*DB, func(), error) {
	b := make([]byte, 6)
	rand.Read(b) //nolint:errcheck
	name := fmt.Sprintf("docflow_test_%s_%s", prefix, hex.EncodeToString(b))
	cfg, err := pgx.ParseConfig(TestServerURL())
	if err != nil {
		return nil, nil, err
	}
	cfg.Database = name
	dsn := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Host, cfg.Port, name)
	if cfg.Password != "" {
		dsn = fmt.Sprintf("postgres://%s:%s@%s:%d/%s?sslmode=disable", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
	}
	db, err := Open(ctx, dsn, 20)
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		db.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(cctx, TestServerURL())
		if err != nil {
			return
		}
		defer admin.Close(cctx)
		admin.Exec(cctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)") //nolint:errcheck
	}
	return db, cleanup, nil
}
