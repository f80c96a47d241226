package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// serveEnv is the environment of a serve process on a fresh database and
// a free port.
func serveEnv(t *testing.T) map[string]string {
	t.Helper()
	url, cleanup := testDatabaseURL(t)
	t.Cleanup(cleanup)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return map[string]string{"DATABASE_URL": url, "WORKDIR": t.TempDir(), "LISTEN_ADDR": addr, "LOG_LEVEL": "warn"}
}

// Equal retry delays are one delay topic: serve starts with them (it
// stopped with "ensure topics: Invalid Request").
func TestServeTakesEqualRetryDelays(t *testing.T) {
	env := serveEnv(t)
	env["STEP_RETRY_DELAYS"] = "1,1"
	m := &Main{Role: "serve", Getenv: func(k string) string { return env[k] }, Stdout: io.Discard, Stderr: io.Discard}
	err := m.Run(context.Background())
	if err == nil {
		// NOTE: answered once, the server is serving: a Shutdown before
		// Serve has begun races with it (http.Server).
		var resp *http.Response
		if resp, err = http.Get("http://" + env["LISTEN_ADDR"] + "/api/diagnostic/healthz/live"); err == nil {
			resp.Body.Close()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cerr := m.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("serve with STEP_RETRY_DELAYS=1,1: %v", err)
	}
}

// A setting the service cannot use stops start-up with a message naming
// the setting, its value, its source and why; the process exits with it.
func TestServeRefusesSettingsItCannotUse(t *testing.T) {
	env := serveEnv(t)
	start := func() error {
		t.Helper()
		m := &Main{Role: "serve", Getenv: func(k string) string { return env[k] }, Stdout: io.Discard, Stderr: io.Discard}
		err := m.Run(context.Background())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.Close(ctx) //nolint:errcheck
		return err
	}
	expect := func(err error, wants ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("started")
		}
		for _, w := range wants {
			if !strings.Contains(err.Error(), w) {
				t.Fatalf("%q lacks %q", err, w)
			}
		}
	}

	// Read before the database opens.
	env["LOG_LEVEL"] = "loud"
	expect(start(), `LOG_LEVEL="loud" (from the environment): must be one of: debug, info, warn, error`)
	env["LOG_LEVEL"] = "warn"

	// Read with the database's values.
	env["STEP_RETRY_DELAYS"] = "1,x"
	env["RATE_LIMIT_UPLOAD"] = "600/fortnight"
	expect(start(), "2 settings cannot be used",
		`STEP_RETRY_DELAYS="1,x" (from the environment): "x" is not a duration`,
		`RATE_LIMIT_UPLOAD="600/fortnight" (from the environment): `)
	delete(env, "STEP_RETRY_DELAYS")
	delete(env, "RATE_LIMIT_UPLOAD")

	conn, err := pgx.Connect(context.Background(), env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `INSERT INTO settings (key, value) VALUES ('STALLED_RUN_TIMEOUT', '-1')`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	expect(start(), `setting STALLED_RUN_TIMEOUT="-1" (set through the settings API): must be at least 1`)

	// The whole command: docflow prints the message and exits 1 with it.
	for k, v := range env {
		t.Setenv(k, v)
	}
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"serve"}, io.Discard, &stderr)
	expect(err, "STALLED_RUN_TIMEOUT")
}
