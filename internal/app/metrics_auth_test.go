package app_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
)

// A worker's metrics listener beyond loopback needs METRICS_TOKEN: without
// it the worker refuses to start, saying so; with it a scrape needs the
// token, and removing the token later shuts everyone out. On loopback
// without a token, only requests addressed to an IP address or localhost
// are answered (a rebound name is refused).
func TestWorkerMetricsBeyondLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	a, err := apptest.Start(context.Background(), apptest.Options{Role: "worker", Env: map[string]string{"WORKER_METRICS_ADDR": "0.0.0.0:0"}})
	if err == nil {
		a.Close()
		t.Fatal("a worker started with /metrics on 0.0.0.0 and no METRICS_TOKEN")
	}
	if msg := err.Error(); !strings.Contains(msg, "METRICS_TOKEN") || !strings.Contains(msg, "loopback") {
		t.Errorf("refusal: %v", err)
	}

	token := strings.Repeat("k", 32)
	a = apptest.New(t, apptest.Options{Role: "worker", Env: map[string]string{"WORKER_METRICS_ADDR": "0.0.0.0:0", "METRICS_TOKEN": token}})
	_, port, _ := net.SplitHostPort(a.MetricsServer.Addr().String())
	url := "http://127.0.0.1:" + port + "/metrics"
	if code, _ := scrape(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d", code)
	}
	if code, b := scrape(t, url, token); code != http.StatusOK || !strings.Contains(b, "go_goroutines") {
		t.Errorf("with the token: %d", code)
	}
	a.SetEnv("METRICS_TOKEN", "")
	if code, _ := scrape(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("beyond loopback once the token is removed: %d", code)
	}

	l := apptest.New(t, apptest.Options{Role: "worker", Env: map[string]string{"WORKER_METRICS_ADDR": "127.0.0.1:0"}})
	url = "http://" + l.MetricsServer.Addr().String() + "/metrics"
	if code, _ := scrape(t, url, ""); code != http.StatusOK {
		t.Errorf("loopback, addressed to its IP: %d", code)
	}
	req, _ := http.NewRequest("GET", url, nil)
	req.Host = "attacker.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("loopback, addressed to another name: %d", resp.StatusCode)
	}
}

// DEBUG_PPROF_ADDR serves a process's runtime profiles on loopback only:
// a process asked to serve them beyond loopback refuses to start.
func TestProfilesOnLoopbackOnly(t *testing.T) {
	t.Parallel()
	a, err := apptest.Start(context.Background(), apptest.Options{Role: "worker", Env: map[string]string{"DEBUG_PPROF_ADDR": "0.0.0.0:0"}})
	if err == nil {
		a.Close()
		t.Fatal("a worker served profiles on 0.0.0.0")
	}
	if msg := err.Error(); !strings.Contains(msg, "DEBUG_PPROF_ADDR") || !strings.Contains(msg, "loopback") {
		t.Errorf("refusal: %v", err)
	}
	l := apptest.New(t, apptest.Options{Role: "worker", Env: map[string]string{"DEBUG_PPROF_ADDR": "127.0.0.1:0"}})
	code, b := scrape(t, "http://"+l.ProfileServer.Addr().String()+"/debug/pprof/goroutine?debug=1", "")
	if code != http.StatusOK || !strings.Contains(b, "goroutine profile") {
		t.Errorf("goroutines: %d %.200s", code, b)
	}
}
