package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// The copy of docflow's database into another PostgreSQL (the database
// wizard's "copy" job). The target gets docflow's schema from the same
// migrations, then every table's rows in batches ordered by primary key.
// Each batch is written in one transaction of the target together with
// the table's position (copy_progress, a table of the target), so a copy
// interrupted at any point resumes after the last batch the target
// committed and writes no row twice. Rows travel as JSON built and read
// by PostgreSQL itself (json_agg, json_populate_recordset), so every type
// arrives as it left, whatever it is. Triggers and foreign keys are off
// in the target's batches (session_replication_role = replica): the rows
// they would derive are copied like any other, and tables arrive in any
// order.

// copyProgressTable is the target's record of the copy's progress.
const copyProgressTable = "docflow_copy_progress"

// copySkipped are tables of the source that are not copied: the
// migrations' own record (the target has its own) and the wizard's jobs
// (the copy running is one of them).
var copySkipped = map[string]bool{"schema_migrations": true, "db_migration_jobs": true, copyProgressTable: true}

// SameDatabase reports whether target is docflow's own database.
func (db *DB) SameDatabase(ctx context.Context, target *External) (bool, error) {
	a, err := db.Identity(ctx)
	if err != nil {
		return false, err
	}
	b, err := target.Identity(ctx)
	if err != nil {
		return false, err
	}
	return a == b, nil
}

// copyTable is one table of the copy: its columns and primary key.
type copyTable struct {
	name string
	cols []string // inserted columns (generated ones aside)
	key  []string // primary key columns; none: copied in one transaction
}

// copyTables lists the source's tables to copy with their columns and keys.
func (db *DB) copyTables(ctx context.Context) ([]copyTable, error) {
	rows, err := db.Pool.Query(ctx, `SELECT c.relname,
			array(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0
				AND NOT a.attisdropped AND a.attgenerated = '' ORDER BY a.attnum),
			coalesce((SELECT array(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(n, o)
				JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.n ORDER BY k.o)
				FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary), '{}')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("list tables to copy: %w", err)
	}
	defer rows.Close()
	var out []copyTable
	for rows.Next() {
		var t copyTable
		if err := rows.Scan(&t.name, &t.cols, &t.key); err != nil {
			return nil, err
		}
		if !copySkipped[t.name] {
			out = append(out, t)
		}
	}
	return out, rows.Err()
}

// PrepareCopyTarget readies target for a copy: a target the copy already
// started (it has copy_progress) is resumed as it is; an empty one
// (no table in its public schema) gets docflow's schema and the progress
// table, and the rows the migrations seed are removed (the source's come
// instead). A target that holds anything else is refused (EINVALID):
// nothing of it is changed.
func PrepareCopyTarget(ctx context.Context, target *External) error {
	started, err := CheckCopyTarget(ctx, target)
	if err != nil || started {
		return err
	}
	if err := migrateOn(ctx, target.conn); err != nil {
		return fmt.Errorf("create docflow's schema in the target: %w", err)
	}
	return pgx.BeginFunc(ctx, target.conn, func(tx pgx.Tx) error {
		var tables []string
		err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(format('public.%I', tablename)), '{}') FROM pg_tables
			WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`).Scan(&tables)
		if err != nil {
			return err
		}
		if len(tables) > 0 {
			// Triggers off: the truncate triggers empty derived tables
			// this statement empties too.
			if err := replicaMode(ctx, tx); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(tables, ", ")); err != nil {
				return fmt.Errorf("empty the target's seeded tables: %w", err)
			}
		}
		_, err = tx.Exec(ctx, `CREATE TABLE `+copyProgressTable+` (
			table_name TEXT PRIMARY KEY, last_key JSON, rows_copied BIGINT NOT NULL DEFAULT 0, done BOOLEAN NOT NULL DEFAULT FALSE)`)
		return err
	})
}

// CheckCopyTarget says whether target can take a copy: started true for
// a target a copy began (it resumes), false for an empty one; EINVALID
// for a database that holds anything else. It changes nothing.
func CheckCopyTarget(ctx context.Context, target *External) (started bool, err error) {
	if err := target.conn.QueryRow(ctx, `SELECT to_regclass('public.`+copyProgressTable+`') IS NOT NULL`).Scan(&started); err != nil {
		return false, fmt.Errorf("inspect target: %w", err)
	}
	if started {
		return true, nil
	}
	var n int
	if err := target.conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&n); err != nil {
		return false, fmt.Errorf("inspect target: %w", err)
	}
	if n > 0 {
		return false, docflow.Errorf(docflow.EINVALID, "the target database is not empty (%d tables): copy into a new, empty database", n)
	}
	return false, nil
}

// CopyTo copies every table of db into target (PrepareCopyTarget made it
// ready), batch rows at a time, recording each table's progress in job and
// calling save after every batch (a save error stops the copy). Tables
// finished by an earlier run of the job are passed over; rows added to
// them since are copied too (their keys follow the last one copied).
func (db *DB) CopyTo(ctx context.Context, target *External, job *docflow.MigrationJob, batch int, save func() error) error {
	if batch <= 0 {
		batch = 1000
	}
	tables, err := db.copyTables(ctx)
	if err != nil {
		return err
	}
	counts, err := db.Tables(ctx)
	if err != nil {
		return err
	}
	count := map[string]int64{}
	for _, c := range counts {
		count[c.Name] = c.RowCount
	}
	for _, t := range tables {
		var copied int64
		var done bool
		err := target.conn.QueryRow(ctx, `SELECT rows_copied, done FROM `+copyProgressTable+` WHERE table_name = $1`, t.name).Scan(&copied, &done)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("progress of %s: %w", t.name, err)
		}
		p := job.Table(t.name)
		p.RowCount, p.RowsCopied, p.Done = max(count[t.name], copied), copied, false
	}
	if err := save(); err != nil {
		return err
	}
	for _, t := range tables {
		if err := db.copyTable(ctx, target, t, job, batch, save); err != nil {
			return fmt.Errorf("copy %s: %w", t.name, err)
		}
	}
	return db.copySequences(ctx, target)
}

// copyTable copies one table's rows after its last copied key.
func (db *DB) copyTable(ctx context.Context, target *External, t copyTable, job *docflow.MigrationJob, batch int, save func() error) error {
	ident := "public." + pgx.Identifier{t.name}.Sanitize()
	cols := make([]string, len(t.cols))
	for i, c := range t.cols {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	colList := strings.Join(cols, ", ")
	insert := `INSERT INTO ` + ident + ` (` + colList + `) SELECT ` + colList +
		` FROM json_populate_recordset(NULL::` + ident + `, $1::json) ON CONFLICT DO NOTHING`
	if len(t.key) == 0 {
		return db.copyWhole(ctx, target, t, ident, colList, insert, job, batch, save)
	}
	keys := make([]string, len(t.key))
	for i, k := range t.key {
		keys[i] = pgx.Identifier{k}.Sanitize()
	}
	keyList := strings.Join(keys, ", ")
	for {
		var last []byte
		err := target.conn.QueryRow(ctx, `SELECT last_key FROM `+copyProgressTable+` WHERE table_name = $1`, t.name).Scan(&last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		where := ""
		args := []any{batch}
		if last != nil {
			where = ` WHERE (` + keyList + `) > (SELECT ` + keyList + ` FROM json_populate_record(NULL::` + ident + `, $2::json))`
			args = append(args, string(last))
		}
		var rowsJSON, lastKey []byte
		var n int64
		err = db.Pool.QueryRow(ctx, `WITH b AS (SELECT `+colList+` FROM `+ident+where+` ORDER BY `+keyList+` LIMIT $1)
			SELECT coalesce(json_agg(b ORDER BY `+aliased("b", keys)+`), '[]'), count(*),
				(SELECT row_to_json(k) FROM (SELECT `+keyList+` FROM b ORDER BY `+descending(keys)+` LIMIT 1) k)
			FROM b`, args...).Scan(&rowsJSON, &n, &lastKey)
		if err != nil {
			return fmt.Errorf("read a batch: %w", err)
		}
		p := job.Table(t.name)
		if n == 0 {
			_, err := target.conn.Exec(ctx, `INSERT INTO `+copyProgressTable+` (table_name, done) VALUES ($1, TRUE)
				ON CONFLICT (table_name) DO UPDATE SET done = TRUE`, t.name)
			if err != nil {
				return err
			}
			p.Done = true
			return save()
		}
		err = pgx.BeginFunc(ctx, target.conn, func(tx pgx.Tx) error {
			if err := replicaMode(ctx, tx); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, insert, string(rowsJSON)); err != nil {
				return fmt.Errorf("write a batch: %w", err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+copyProgressTable+` (table_name, last_key, rows_copied) VALUES ($1, $2::json, $3)
				ON CONFLICT (table_name) DO UPDATE SET last_key = EXCLUDED.last_key,
					rows_copied = `+copyProgressTable+`.rows_copied + EXCLUDED.rows_copied, done = FALSE`, t.name, string(lastKey), n)
			return err
		})
		if err != nil {
			return err
		}
		p.RowsCopied += n
		p.RowCount = max(p.RowCount, p.RowsCopied)
		if err := save(); err != nil {
			return err
		}
	}
}

// copyWhole copies a table without a primary key: its rows in batches
// (by physical position) into one transaction of the target, so that an
// interruption leaves none of them there.
func (db *DB) copyWhole(ctx context.Context, target *External, t copyTable, ident, colList, insert string, job *docflow.MigrationJob, batch int, save func() error) error {
	var done bool
	err := target.conn.QueryRow(ctx, `SELECT done FROM `+copyProgressTable+` WHERE table_name = $1`, t.name).Scan(&done)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if done {
		job.Table(t.name).Done = true
		return nil
	}
	var total int64
	err = pgx.BeginFunc(ctx, target.conn, func(tx pgx.Tx) error {
		if err := replicaMode(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+ident); err != nil {
			return err
		}
		src, err := db.Pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer src.Rollback(ctx) //nolint:errcheck // read only
		if _, err := src.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
			return err
		}
		for offset := 0; ; offset += batch {
			var rowsJSON []byte
			var n int64
			err := src.QueryRow(ctx, `SELECT coalesce(json_agg(b), '[]'), count(*) FROM (SELECT `+colList+` FROM `+ident+
				` ORDER BY ctid OFFSET $1 LIMIT $2) b`, offset, batch).Scan(&rowsJSON, &n)
			if err != nil {
				return fmt.Errorf("read a batch: %w", err)
			}
			if n == 0 {
				break
			}
			if _, err := tx.Exec(ctx, insert, string(rowsJSON)); err != nil {
				return fmt.Errorf("write a batch: %w", err)
			}
			total += n
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+copyProgressTable+` (table_name, rows_copied, done) VALUES ($1, $2, TRUE)
			ON CONFLICT (table_name) DO UPDATE SET rows_copied = EXCLUDED.rows_copied, done = TRUE`, t.name, total)
		return err
	})
	if err != nil {
		return err
	}
	p := job.Table(t.name)
	p.RowsCopied, p.Done = total, true
	p.RowCount = max(p.RowCount, total)
	return save()
}

// replicaMode turns the target's triggers and foreign keys off for the
// rest of tx; the copy's user must be allowed to (a superuser, or one
// granted SET on the parameter).
func replicaMode(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		return docflow.Errorf(docflow.EFORBIDDEN, "the target's user may not set session_replication_role: connect as a superuser, or GRANT SET ON PARAMETER session_replication_role TO the user")
	}
	return err
}

// copySequences sets each of the target's sequences to the source's value,
// so ids the target hands out next follow the copied ones.
func (db *DB) copySequences(ctx context.Context, target *External) error {
	rows, err := db.Pool.Query(ctx, `SELECT format('public.%I', sequencename), coalesce(last_value, 0), last_value IS NOT NULL
		FROM pg_sequences WHERE schemaname = 'public'`)
	if err != nil {
		return fmt.Errorf("read sequences: %w", err)
	}
	type seq struct {
		name   string
		value  int64
		called bool
	}
	var seqs []seq
	for rows.Next() {
		var s seq
		if err := rows.Scan(&s.name, &s.value, &s.called); err != nil {
			rows.Close()
			return err
		}
		seqs = append(seqs, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range seqs {
		if !s.called {
			continue
		}
		if _, err := target.conn.Exec(ctx, `SELECT setval($1::regclass, $2, true)`, s.name, s.value); err != nil {
			return fmt.Errorf("set sequence %s: %w", s.name, err)
		}
	}
	return nil
}

// descending is the quoted columns each with DESC.
func descending(cols []string) string {
	return strings.Join(cols, " DESC, ") + " DESC"
}

// aliased is the quoted columns as alias.column, comma-separated.
func aliased(alias string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = alias + "." + c
	}
	return strings.Join(out, ", ")
}
