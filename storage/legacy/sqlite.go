package legacy

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"docflow"
)

// SQLite is an open SQLite file, read only.
type SQLite struct {
	db   *sql.DB
	path string
}

var _ docflow.LegacySource = (*SQLite)(nil)

// Open opens the SQLite file at path read only and checks that it is a
// SQLite database: a missing file is ENOTFOUND, a file of another kind
// EINVALID, each with words an administrator can act on.
func Open(ctx context.Context, path string) (*SQLite, error) {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, docflow.Errorf(docflow.ENOTFOUND, "no file at %s", path)
		}
		return nil, docflow.Errorf(docflow.EINVALID, "cannot read %s: %v", path, errors.Unwrap(err))
	}
	if st.IsDir() {
		return nil, docflow.Errorf(docflow.EINVALID, "%s is a folder, not a SQLite file", path)
	}
	// mode=ro: nothing is ever written to the source, and a missing file
	// is not created; query_only guards the same from the other side.
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?mode=ro&_pragma=query_only(1)&_pragma=busy_timeout(5000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	s := &SQLite{db: db, path: path}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
		db.Close()
		return nil, docflow.Errorf(docflow.EINVALID, "%s is not a SQLite database (%s)", path, sqliteReason(err))
	}
	return s, nil
}

// sqliteReason is the driver's words for err without the file's path
// repeated.
func sqliteReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 && i+2 < len(msg) {
		msg = msg[i+2:]
	}
	return msg
}

// Version is the SQLite library's version.
func (s *SQLite) Version(ctx context.Context) (string, error) {
	var v string
	if err := s.db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&v); err != nil {
		return "", fmt.Errorf("sqlite version: %w", err)
	}
	return v, nil
}

// Close closes the file.
func (s *SQLite) Close() error { return s.db.Close() }

// quote is name as an SQLite identifier.
func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// Tables lists the user tables (SQLite's own aside) with their row counts,
// by name.
func (s *SQLite) Tables(ctx context.Context) ([]docflow.TableCount, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, docflow.Errorf(docflow.EINVALID, "%s is not a SQLite database (%s)", s.path, sqliteReason(err))
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([]docflow.TableCount, 0, len(names))
	for _, n := range names {
		var c int64
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM `+quote(n)).Scan(&c); err != nil {
			return nil, fmt.Errorf("count %s: %w", n, err)
		}
		out = append(out, docflow.TableCount{Name: n, RowCount: c})
	}
	return out, nil
}

// Columns lists table's columns in lower case; ENOTFOUND when there is no
// such table.
func (s *SQLite) Columns(ctx context.Context, table string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT lower(name) FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "no table %s", table)
	}
	return cols, nil
}

// Rows returns up to limit rows of table with id above after, by id.
func (s *SQLite) Rows(ctx context.Context, table string, cols []string, after int64, limit int) ([]docflow.LegacyRow, error) {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quote(c)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+strings.Join(q, ", ")+` FROM `+quote(table)+
		` WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	var out []docflow.LegacyRow
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("read %s: %w", table, err)
		}
		r := make(docflow.LegacyRow, len(cols))
		for i, c := range cols {
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
