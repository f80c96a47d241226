package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow/storage/postgres"
)

func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"serve", "worker", "broker", "migrate", "sweep-blobs", "KAFKA_BROKERS"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("help lacks %q:\n%s", want, out.String())
		}
	}
	for _, cmd := range []string{"serve", "api", "worker", "broker", "migrate", "reindex", "sweep-blobs"} {
		errb.Reset()
		err := run(context.Background(), []string{cmd, "--help"}, &out, &errb)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(errb.String(), "Usage: docflow "+cmd) {
			t.Fatalf("%s --help: %v %q", cmd, err, errb.String())
		}
	}
	if err := run(context.Background(), []string{"frobnicate"}, io.Discard, io.Discard); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestWorkerNeedsBrokers(t *testing.T) {
	url, cleanup := testDatabaseURL(t)
	defer cleanup()
	env := map[string]string{"DATABASE_URL": url, "WORKDIR": t.TempDir()}
	m := &Main{Role: "worker", Getenv: func(k string) string { return env[k] }, Stdout: io.Discard, Stderr: io.Discard}
	err := m.Run(context.Background())
	m.Close(context.Background()) //nolint:errcheck
	if err == nil || !strings.Contains(err.Error(), "docflow broker") {
		t.Fatalf("worker without brokers: %v", err)
	}
}

// TestServeStartsAndStops runs a whole `serve` process in-process: database
// created, embedded broker, relay, HTTP ready, then a clean shutdown.
func TestServeStartsAndStops(t *testing.T) {
	url, cleanup := testDatabaseURL(t)
	defer cleanup()
	// A free port is picked, closed and handed over: another process may
	// take it meanwhile, and then another port is tried.
	var m *Main
	var addr string
	for attempt := 1; ; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr = ln.Addr().String()
		ln.Close()
		env := map[string]string{"DATABASE_URL": url, "WORKDIR": t.TempDir(), "LISTEN_ADDR": addr, "LOG_LEVEL": "warn"}
		m = &Main{Role: "serve", Getenv: func(k string) string { return env[k] }, Stdout: io.Discard, Stderr: io.Discard}
		err = m.Run(context.Background())
		if err == nil {
			break
		}
		m.Close(context.Background()) //nolint:errcheck
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
	resp, err := http.Get("http://" + addr + "/api/diagnostic/healthz/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"database":{"status":"ok"}`) {
		t.Fatalf("ready: %d %s", resp.StatusCode, body)
	}
	// The status page (the web application is at /), in single-user mode.
	resp, err = http.Get("http://" + addr + "/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Single-user mode") || !strings.Contains(string(body), "database") {
		t.Fatalf("status page: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + addr + "/api/diagnostic/healthz/live"); err == nil {
		t.Fatal("server still answering after Close")
	}
}

// testDatabaseURL names a database that does not exist yet (docflow creates
// it) and drops it afterwards.
func testDatabaseURL(t *testing.T) (string, func()) {
	t.Helper()
	name := "docflow_test_cmd_" + strings.ReplaceAll(strings.ToLower(t.Name()), "/", "_")
	cfg, err := pgx.ParseConfig(postgres.TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	drop := func() {
		conn, err := pgx.ConnectConfig(context.Background(), cfg)
		if err != nil {
			return
		}
		defer conn.Close(context.Background())
		conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") //nolint:errcheck
	}
	drop()
	u := strings.Replace(postgres.TestServerURL(), "/postgres?", "/"+name+"?", 1)
	return u, drop
}
