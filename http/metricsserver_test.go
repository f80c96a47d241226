package http

import (
	"context"
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// A client that sends its headers slowly is cut off after the read
// timeout, so idle scrapers cannot hold the worker's listener.
func TestServeMetricsCutsOffSlowClients(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := ServeMetrics(ln, prometheus.NewRegistry(), func() string { return "" }, func(context.Context) error { return nil }, zerolog.Nop())
	defer s.Close(context.Background())
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(3 * metricsReadTimeout))
	b, _ := io.ReadAll(c)
	if d := time.Since(start); d > metricsReadTimeout+2*time.Second || strings.Contains(string(b), "200 OK") {
		t.Fatalf("slow client kept for %v, got %q", d, b)
	}
}

// The probes answer without the scrape token (a probe cannot carry a
// secret) and say only ok or not; /metrics still wants the token.
func TestServeMetricsAnswersProbes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	ready := func(context.Context) error {
		if down.Load() {
			return errors.New("database: connection refused to db.internal:5432")
		}
		return nil
	}
	s := ServeMetrics(ln, prometheus.NewRegistry(), func() string { return strings.Repeat("t", 24) }, ready, zerolog.Nop())
	defer s.Close(context.Background())
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := nethttp.Get("http://" + s.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path, body string
		code       int
		down       bool
	}{
		{LivePath, `{"status":"ok"}`, 200, false},
		{ReadyPath, `{"status":"ready"}`, 200, false},
		{LivePath, `{"status":"ok"}`, 200, true},
		{ReadyPath, `{"status":"not_ready"}`, 503, true},
		{"/metrics", "", 401, false},
		{"/api/diagnostic/health", "", 404, false},
	} {
		down.Store(c.down)
		code, body := get(c.path)
		if code != c.code || strings.TrimSpace(body) != c.body {
			t.Errorf("GET %s (database down %v) = %d %q, want %d %q", c.path, c.down, code, body, c.code, c.body)
		}
	}
}
