package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"docflow"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// MigrationFS returns the embedded migration files (for tests of other packages).
func MigrationFS() fs.FS { return migrationFS }

// migrationLock is the advisory lock key held while migrating, so two
// processes starting at once apply each migration exactly once.
const migrationLock = 7_245_001

// DB is the connection pool and the clock shared by the repositories.
type DB struct {
	Pool *pgxpool.Pool
	URL  string
	// Now is the clock; tests replace it.
	Now func() time.Time
}

// Open connects to the database at dsn, creating the database first when it
// does not exist, and applies pending migrations.
func Open(ctx context.Context, dsn string, maxConns int32) (*DB, error) {
	if err := ensureDatabase(ctx, dsn); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect postgres: %w", err)
	}
	db := &DB{Pool: pool, URL: dsn, Now: time.Now}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect postgres at %s: %w (is PostgreSQL running? `make run` starts it)", redact(dsn), err)
	}
	if err := db.Migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return db, nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// Ping checks the database answers.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	return db.Pool.QueryRow(ctx, "SELECT 1").Scan(&one)
}

// Migrate applies the embedded migrations not yet recorded in
// schema_migrations, each in its own transaction, under an advisory lock.
func (db *DB) Migrate(ctx context.Context) error {
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	return migrateOn(ctx, conn)
}

// migrator is a connection migrations run on: a pool's or one of its own
// (a copy's target, dbcopy.go).
type migrator interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

// migrateOn applies the migrations on conn under the advisory lock.
func migrateOn(ctx context.Context, conn migrator) error {
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", migrationLock); err != nil {
		return fmt.Errorf("migrate lock: %w", err)
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", migrationLock) //nolint:errcheck
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		name TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS(SELECT 1 FROM schema_migrations WHERE name=$1)", base).Scan(&exists); err != nil {
			return fmt.Errorf("migrate %s: %w", base, err)
		}
		if exists {
			continue
		}
		sqlText, err := migrationFS.ReadFile(name)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sqlText)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (name) VALUES ($1)", base)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: %w", base, err)
		}
	}
	return nil
}

// ensureDatabase creates the database named in dsn when it is missing, by
// connecting to the maintenance database "postgres" on the same server.
func ensureDatabase(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	name := cfg.Database
	if name == "" || name == "postgres" {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err == nil {
		conn.Close(ctx)
		return nil
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "3D000" { // invalid_catalog_name
		return fmt.Errorf("connect postgres at %s: %w (is PostgreSQL running? `make run` starts it)", redact(dsn), err)
	}
	admin := cfg.Copy()
	admin.Database = "postgres"
	aconn, err := pgx.ConnectConfig(cctx, admin)
	if err != nil {
		return fmt.Errorf("connect postgres maintenance database: %w", err)
	}
	defer aconn.Close(ctx)
	_, err = aconn.Exec(cctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	if err != nil {
		if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // created by a concurrent process
			return nil
		}
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// redact hides the password of a connection URL for messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// isUniqueViolation reports a unique-constraint error.
func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// notFound maps pgx.ErrNoRows to a docflow ENOTFOUND error.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return docflow.Errorf(docflow.ENOTFOUND, format, args...)
	}
	return err
}
