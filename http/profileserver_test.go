package http

import (
	"context"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// The profile listener serves the heap profile on loopback, refuses a
// request naming it by a DNS name (rebinding), and cannot be started
// beyond loopback.
func TestServeProfiles(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ServeProfiles(ln, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	base := "http://" + s.Addr().String()
	resp, err := nethttp.Get(base + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "heap profile") {
		t.Fatalf("heap: %d %.200s", resp.StatusCode, b)
	}

	req, _ := nethttp.NewRequest("GET", base+"/debug/pprof/heap", nil)
	req.Host = "attacker.example:6060"
	resp, err = nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != nethttp.StatusForbidden {
		t.Fatalf("rebound name answered %d", resp.StatusCode)
	}

	resp, err = nethttp.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != nethttp.StatusNotFound {
		t.Fatalf("/metrics answered %d", resp.StatusCode)
	}

	wide, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Close()
	if s, err := ServeProfiles(wide, zerolog.Nop()); err == nil {
		s.Close(context.Background())
		t.Fatal("served profiles beyond loopback")
	}
}
