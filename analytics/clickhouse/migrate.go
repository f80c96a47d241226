package clickhouse

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow/analytics"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migration is one versioned schema change: the statements of
// migrations/NNNN_name.sql, with {db} replaced by the database and
// {columns} by the event columns. Every statement is idempotent (IF NOT
// EXISTS), so two processes migrating at once do no harm.
type Migration struct {
	Version    int
	Name       string
	Statements []string
}

// Migrations returns the migrations for database, in version order.
func Migrations(database string) ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	cols := "    " + strings.Join(analytics.ColumnDefs(true), ",\n    ")
	var out []Migration
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".sql")
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("clickhouse migration %s: name is not NNNN_name.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		text := strings.NewReplacer("{db}", database, "{columns}", cols).Replace(string(body))
		m := Migration{Version: v, Name: rest}
		for _, stmt := range strings.Split(text, ";\n") {
			if s := stripComments(stmt); s != "" {
				m.Statements = append(m.Statements, s)
			}
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// stripComments drops whole-line -- comments and surrounding blank space.
func stripComments(stmt string) string {
	var lines []string
	for _, l := range strings.Split(stmt, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "--") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// DDL returns every statement that builds database from nothing, in order
// (for checking the SQL against another engine).
func DDL(database string) ([]string, error) {
	ms, err := Migrations(database)
	if err != nil {
		return nil, err
	}
	out := []string{"CREATE DATABASE IF NOT EXISTS " + database, schemaMigrationsDDL(database)}
	for _, m := range ms {
		out = append(out, m.Statements...)
	}
	return out, nil
}

func schemaMigrationsDDL(database string) string {
	return "CREATE TABLE IF NOT EXISTS " + database + `.schema_migrations (
    version    UInt32,
    name       String,
    applied_at DateTime
) ENGINE = MergeTree() ORDER BY version`
}

// Migrate creates database and applies the migrations it has not recorded
// in database.schema_migrations, in order, recording each.
func Migrate(ctx context.Context, conn driver.Conn, database string) error {
	if !validName(database) {
		return fmt.Errorf("migrate clickhouse: invalid database name %q", database)
	}
	ms, err := Migrations(database)
	if err != nil {
		return fmt.Errorf("migrate clickhouse: %w", err)
	}
	for _, stmt := range []string{"CREATE DATABASE IF NOT EXISTS " + database, schemaMigrationsDDL(database)} {
		if err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("migrate clickhouse: %w", err)
		}
	}
	applied, err := appliedVersions(ctx, conn, database)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		for _, stmt := range m.Statements {
			if err := conn.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("migrate clickhouse %04d_%s: %w", m.Version, m.Name, err)
			}
		}
		// NOTE: an inline INSERT … VALUES through Exec hangs on 18.16; a
		// one-row batch does not.
		batch, err := conn.PrepareBatch(ctx, "INSERT INTO "+database+".schema_migrations (version, name, applied_at)")
		if err != nil {
			return fmt.Errorf("record clickhouse migration %d: %w", m.Version, err)
		}
		if err := batch.Append(uint32(m.Version), m.Name, time.Now().UTC()); err != nil {
			batch.Close()
			return fmt.Errorf("record clickhouse migration %d: %w", m.Version, err)
		}
		if err := batch.Send(); err != nil {
			return fmt.Errorf("record clickhouse migration %d: %w", m.Version, err)
		}
	}
	return nil
}

func appliedVersions(ctx context.Context, conn driver.Conn, database string) (map[int]bool, error) {
	rows, err := conn.Query(ctx, "SELECT DISTINCT toInt64(version) FROM "+database+".schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read clickhouse schema_migrations: %w", err)
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read clickhouse schema_migrations: %w", err)
		}
		out[int(v)] = true
	}
	return out, rows.Err()
}
