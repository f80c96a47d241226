package postgres

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// DATABASE_URL may name the server by its Unix socket (the host
// parameter, the URL's host empty): the setting's check accepts it, and
// Open creates the database through it and connects.
func TestOpenThroughUnixSocket(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	var dirs string
	err = conn.QueryRow(ctx, `SHOW unix_socket_directories`).Scan(&dirs)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir, _, _ := strings.Cut(dirs, ",")
	if dir = strings.TrimSpace(dir); !strings.HasPrefix(dir, "/") {
		t.Skipf("the test server listens on no Unix socket (%q)", dirs)
	}
	cfg, err := pgx.ParseConfig(TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	name := "docflow_test_socket_" + strings.ReplaceAll(t.Name(), "/", "_")
	name = strings.ToLower(name)
	dsn := fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=%s&sslmode=disable", name, url.QueryEscape(dir), cfg.Port, url.QueryEscape(cfg.User))
	if err := docflow.PostgresURL()(dsn); err != nil {
		t.Fatalf("the setting refuses %s: %v", dsn, err)
	}
	t.Cleanup(func() {
		adminExec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)") //nolint:errcheck // a test's cleanup
	})
	adminExec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)") //nolint:errcheck // left by an interrupted run
	db, err := Open(ctx, dsn, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var addr *string
	if err := db.Pool.QueryRow(ctx, `SELECT inet_client_addr()::text`).Scan(&addr); err != nil {
		t.Fatal(err)
	}
	if addr != nil {
		t.Fatalf("connected over TCP from %s, not the socket", *addr)
	}
}
