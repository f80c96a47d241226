package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// DialFunc opens the network connection to a database server; the
// database wizard passes netguard's, so no connection leaves by another
// way.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// External is one connection to a PostgreSQL database that is not (or
// may not be) docflow's own: the database wizard's source or target.
type External struct {
	conn *pgx.Conn
}

var _ docflow.LegacySource = (*External)(nil)

// externalConnectTimeout bounds connecting to a database an administrator
// named, so a host that never answers is a prompt failure.
const externalConnectTimeout = 10 * time.Second

// OpenExternal connects to the database at rawURL through dial. Its
// errors are driver errors; ExternalFailure puts them in words.
func OpenExternal(ctx context.Context, rawURL string, dial DialFunc) (*External, error) {
	if dial == nil {
		return nil, errors.New("postgres: OpenExternal needs a dial func")
	}
	cfg, err := pgx.ParseConfig(docflow.PgxURL(rawURL))
	if err != nil {
		return nil, docflow.Errorf(docflow.EINVALID, "the PostgreSQL URL does not parse: %s", redactParseError(err))
	}
	cfg.DialFunc = pgconn.DialFunc(dial)
	cfg.ConnectTimeout = externalConnectTimeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &External{conn: conn}, nil
}

// redactParseError keeps pgx's reason for a URL that does not parse
// without the URL itself (it may carry a password).
func redactParseError(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return "invalid URL"
}

// ExternalFailure puts a PostgreSQL server's refusal in words an
// administrator can act on; ok is false for errors that are not the
// server's (the network's, which the caller describes).
func ExternalFailure(err error) (reason string, ok bool) {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return "", false
	}
	switch pgErr.Code {
	case "28P01", "28000":
		return "authentication failed: check the user name and password (and the server's pg_hba.conf)", true
	case "3D000":
		return "the database does not exist on that server", true
	case "42501":
		return "permission denied: " + pgErr.Message, true
	case "57P03":
		return "the server is starting up or shutting down; try again", true
	case "53300":
		return "the server has too many connections; try again", true
	}
	return "the server refused: " + pgErr.Message, true
}

// Close closes the connection.
func (e *External) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.conn.Close(ctx)
}

// Version is the server's version (server_version, e.g. "15.14").
func (e *External) Version(ctx context.Context) (string, error) {
	var v string
	if err := e.conn.QueryRow(ctx, `SHOW server_version`).Scan(&v); err != nil {
		return "", fmt.Errorf("server version: %w", err)
	}
	return v, nil
}

// identityQuery names a database uniquely enough to tell whether two
// connections reach the same one, whatever host name each used: the
// server's start time (to the microsecond), the database's oid and name.
const identityQuery = `SELECT pg_postmaster_start_time()::text || '/' ||
	(SELECT oid FROM pg_database WHERE datname = current_database())::text || '/' || current_database()`

// Identity is the database's identity (identityQuery).
func (e *External) Identity(ctx context.Context) (string, error) {
	var id string
	if err := e.conn.QueryRow(ctx, identityQuery).Scan(&id); err != nil {
		return "", fmt.Errorf("database identity: %w", err)
	}
	return id, nil
}

// Identity is docflow's own database's identity, to compare with an
// External's.
func (db *DB) Identity(ctx context.Context) (string, error) {
	var id string
	if err := db.Pool.QueryRow(ctx, identityQuery).Scan(&id); err != nil {
		return "", fmt.Errorf("database identity: %w", err)
	}
	return id, nil
}

// Tables lists the tables of the public schema with exact row counts, by
// name.
func (e *External) Tables(ctx context.Context) ([]docflow.TableCount, error) {
	return tableCounts(ctx, e.conn)
}

// Tables lists docflow's own tables with exact row counts.
func (db *DB) Tables(ctx context.Context) ([]docflow.TableCount, error) {
	return tableCounts(ctx, db.Pool)
}

func tableCounts(ctx context.Context, q querier) ([]docflow.TableCount, error) {
	rows, err := q.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	out := make([]docflow.TableCount, 0, len(names))
	for _, n := range names {
		var c int64
		if err := q.QueryRow(ctx, `SELECT count(*) FROM public.`+pgx.Identifier{n}.Sanitize()).Scan(&c); err != nil {
			return nil, fmt.Errorf("count %s: %w", n, err)
		}
		out = append(out, docflow.TableCount{Name: n, RowCount: c})
	}
	return out, nil
}

// Columns lists a table's columns in lower case (ENOTFOUND for no such
// table): the original service's PostgreSQL database as a LegacySource.
func (e *External) Columns(ctx context.Context, table string) ([]string, error) {
	rows, err := e.conn.Query(ctx, `SELECT lower(column_name) FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("columns of %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "no table %s", table)
	}
	return cols, nil
}

// Rows returns up to limit rows of table with id above after, by id.
func (e *External) Rows(ctx context.Context, table string, cols []string, after int64, limit int) ([]docflow.LegacyRow, error) {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = pgx.Identifier{c}.Sanitize()
	}
	rows, err := e.conn.Query(ctx, `SELECT `+strings.Join(q, ", ")+` FROM public.`+pgx.Identifier{table}.Sanitize()+
		` WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	defer rows.Close()
	var out []docflow.LegacyRow
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
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
