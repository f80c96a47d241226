package http

import (
	"context"
	"io"
	"net"
	"strings"
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
	s := ServeMetrics(ln, prometheus.NewRegistry(), func() string { return "" }, zerolog.Nop())
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
