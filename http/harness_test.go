package http

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/storage/postgres"
)

// testEnv is a running server on a loopback port backed by a throwaway
// PostgreSQL database. Resource tests build on it: each mounts the
// resources it tests, some with failing dependencies. Tests of the API as
// `docflow api` builds it use internal/app's test twin instead, in
// e2e/api (internal/app imports http).
type testEnv struct {
	t        testing.TB
	DB       *postgres.DB
	Settings *postgres.SettingsStore
	Tokens   *postgres.TokenStore
	Sessions *postgres.SessionStore
	Server   *Server
	URL      string
	env      map[string]string
	Client   *nethttp.Client
}

// newTestEnv starts a server. env overrides environment settings; mount
// registers extra routes before serving.
func newTestEnv(t testing.TB, env map[string]string, mount ...func(*testEnv)) *testEnv {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "http")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	e := &testEnv{t: t, DB: db, env: map[string]string{"RATE_LIMITING_ENABLED": "false"}}
	for k, v := range env {
		e.env[k] = v
	}
	secret := strings.Repeat("s", 40)
	c, err := postgres.NewCipher(secret)
	if err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(io.Discard)
	if os.Getenv("TEST_LOG") != "" {
		log = zerolog.New(zerolog.NewConsoleWriter())
	}
	e.Settings, err = postgres.NewSettingsStore(ctx, db, c, func(k string) string { return e.env[k] }, log)
	if err != nil {
		t.Fatal(err)
	}
	e.Tokens = postgres.NewTokenStore(db)
	e.Sessions = postgres.NewSessionStore(db)
	e.Server = NewServer(Config{Log: log, Settings: e.Settings, Tokens: e.Tokens, Sessions: e.Sessions,
		Version: "test", SessionSecret: secret})
	e.Server.AddHealthCheck(HealthCheck{Name: "database", Critical: true, Check: db.Ping})
	for _, m := range mount {
		m(e)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.URL = "http://" + ln.Addr().String()
	go e.Server.Serve(ln) //nolint:errcheck
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Server.Shutdown(ctx) //nolint:errcheck
	})
	e.Client = &nethttp.Client{Timeout: 30 * time.Second, CheckRedirect: func(*nethttp.Request, []*nethttp.Request) error {
		return nethttp.ErrUseLastResponse
	}}
	return e
}

// SetEnv changes an environment setting for the running server.
func (e *testEnv) SetEnv(k, v string) { e.env[k] = v }

// do sends a request; body may be nil, []byte, string or any JSON value.
func (e *testEnv) do(method, path, token string, body any, headers ...string) (*nethttp.Response, []byte) {
	e.t.Helper()
	var r io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		r = bytes.NewReader(b)
	case string:
		r, ctype = strings.NewReader(b), "application/json"
	case io.Reader:
		r = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r, ctype = bytes.NewReader(raw), "application/json"
	}
	req, err := nethttp.NewRequest(method, e.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

// json decodes body into a map (or fails the test).
func (e *testEnv) json(body []byte) map[string]any {
	e.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		e.t.Fatalf("decode %q: %v", body, err)
	}
	return m
}

// expect fails the test unless resp has the status.
func (e *testEnv) expect(resp *nethttp.Response, body []byte, status int) {
	e.t.Helper()
	if resp.StatusCode != status {
		e.t.Fatalf("%s %s: status %d, want %d; body %s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, body)
	}
}

// token issues an API token for owner directly in the store.
func (e *testEnv) token(owner string) string {
	e.t.Helper()
	plain := NewToken()
	err := e.Tokens.CreateToken(context.Background(), &docflow.APIToken{OwnerID: owner, Name: "test", TokenPrefix: plain[:12], TokenHash: HashToken(plain)})
	if err != nil {
		e.t.Fatal(err)
	}
	return plain
}
