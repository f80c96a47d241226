package app_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
)

// scrape GETs url with an optional bearer token and returns the status
// and body.
func scrape(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWorkerMetricsListener: a worker with WORKER_METRICS_ADDR serves the
// core series on GET /metrics once it has processed a document (step
// attempts and durations, consumer lag, process resources), answers the
// probes, answers 404 with no body to any other path, and asks for
// METRICS_TOKEN once set (of /metrics, not of the probes).
func TestWorkerMetricsListener(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "worker", Env: map[string]string{"WORKER_METRICS_ADDR": "127.0.0.1:0"}})
	if a.MetricsServer == nil {
		t.Fatal("worker with WORKER_METRICS_ADDR has no metrics listener")
	}
	base := "http://" + a.MetricsServer.Addr().String()

	// A bound on a hang: the lag look-up (a 3 s timeout per scrape) can
	// miss on a loaded machine for a while.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	body := "metrics listener test document\n"
	if _, err := a.Intake.Ingest(ctx, docflow.Upload{Filename: "m.txt", Body: strings.NewReader(body), Size: int64(len(body)), Channel: docflow.ChannelUpload}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`docflow_step_attempts_total{`, `docflow_step_duration_seconds_bucket{`, `docflow_documents_ingested_total{`,
		`docflow_queue_lag{`, `process_resident_memory_bytes `, `process_cpu_seconds_total `, `go_goroutines `,
	}
	var got string
	for {
		code, b := scrape(t, base+"/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", code, b)
		}
		missing := ""
		for _, w := range want {
			if !strings.Contains(b, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			break
		}
		got = b
		select {
		case <-ctx.Done():
			t.Fatalf("no %s on the worker's /metrics:\n%s", missing, got)
		case <-time.After(200 * time.Millisecond):
		}
	}

	for _, path := range []string{"/", "/api/health", "/debug/pprof/", "/metrics/x", "/metrics?x=1/../"} {
		code, b := scrape(t, base+path, "")
		if path == "/metrics?x=1/../" {
			if code != http.StatusOK {
				t.Errorf("GET %s: %d", path, code)
			}
			continue
		}
		if code != http.StatusNotFound || b != "" {
			t.Errorf("GET %s: %d %q, want 404 with no body", path, code, b)
		}
	}
	req, _ := http.NewRequest("POST", base+"/metrics", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /metrics: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	token := strings.Repeat("m", 30)
	a.SetEnv("METRICS_TOKEN", token)
	if code, _ := scrape(t, base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without the token: %d", code)
	}
	if code, _ := scrape(t, base+"/metrics", "wrong"+token); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: %d", code)
	}
	if code, b := scrape(t, base+"/metrics", token); code != http.StatusOK || !strings.Contains(b, "docflow_step_attempts_total") {
		t.Errorf("GET /metrics with the token: %d", code)
	}

	// The probes want no token (a kubelet's cannot carry one) and answer
	// ready while the worker's database does.
	for path, want := range map[string]string{dfhttp.LivePath: `{"status":"ok"}`, dfhttp.ReadyPath: `{"status":"ready"}`} {
		if code, b := scrape(t, base+path, ""); code != http.StatusOK || strings.TrimSpace(b) != want {
			t.Errorf("GET %s without the token: %d %q, want 200 %s", path, code, b, want)
		}
	}
}

// A worker without WORKER_METRICS_ADDR listens nowhere.
func TestWorkerMetricsListenerOff(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "worker"})
	if a.MetricsServer != nil {
		t.Fatalf("worker listens on %s without WORKER_METRICS_ADDR", a.MetricsServer.Addr())
	}
}
