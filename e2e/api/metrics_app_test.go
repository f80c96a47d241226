package api_test

import (
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// scrape GETs /metrics with the given Authorization header (or cookies of
// client) and parses the exposition with Prometheus' own parser.
func scrape(t *testing.T, client *nethttp.Client, url, auth string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := nethttp.NewRequest("GET", url+"/metrics", nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return 200, mfs
}

// find returns the metric of family name whose labels include want.
func find(mfs map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	mf := mfs[name]
	if mf == nil {
		return nil
	}
next:
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		return m
	}
	return nil
}

// TestMetricsEndpoint: /metrics answers the METRICS_TOKEN (and nobody
// without it), and exports the core series: step attempts and durations,
// intake, HTTP requests by route and status, queue lag, the analytics
// buffer and the process's resources.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	const token = "scrape-token-0123456789abcdef"
	a := apptest.New(t, apptest.Options{Role: "serve", Env: map[string]string{
		"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "admin password", "METRICS_TOKEN": token}})
	client := &nethttp.Client{Timeout: 20 * time.Second}

	if status, _ := scrape(t, client, a.URL, ""); status != 401 {
		t.Fatalf("no credentials: %d, want 401", status)
	}
	if status, _ := scrape(t, client, a.URL, "Bearer not-the-token-0123456789"); status != 401 {
		t.Fatalf("wrong token: %d, want 401", status)
	}

	a.Recorder.Record(docflow.Metric{Kind: docflow.MetricStep, StepType: "ocr", Status: docflow.StepFailed,
		ErrorClass: "timeout", Duration: 1500 * time.Millisecond})
	a.Recorder.Record(docflow.Metric{Kind: docflow.MetricStep, StepType: "ocr", Status: docflow.StepSucceeded,
		Duration: 300 * time.Millisecond, Bytes: 2048})
	a.Recorder.Record(docflow.Metric{Kind: docflow.MetricIntake, Channel: "upload", Bytes: 100})
	get(t, a.URL+"/api/diagnostic/healthz/ready")

	// The lag look-up asks the broker under a 3 s timeout, which a loaded
	// machine can miss (docflow_queue_lag_up 0, the lags unknown): scrape
	// until it answers.
	var mfs map[string]*dto.MetricFamily
	testsupport.WaitFor(t, 3*time.Minute, "an answered lag look-up", func() bool {
		var status int
		status, mfs = scrape(t, client, a.URL, "Bearer "+token)
		if status != 200 {
			t.Fatalf("METRICS_TOKEN: %d", status)
		}
		m := find(mfs, "docflow_queue_lag_up", nil)
		return m != nil && m.GetGauge().GetValue() == 1 &&
			find(mfs, "docflow_queue_lag", map[string]string{"topic": "docflow.files.ingested"}) != nil
	})
	if m := find(mfs, "docflow_step_attempts_total", map[string]string{"step_type": "ocr", "status": docflow.StepFailed, "error_class": "timeout"}); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("failed ocr attempts: %v", m)
	}
	if m := find(mfs, "docflow_step_duration_seconds", map[string]string{"step_type": "ocr"}); m == nil ||
		m.GetHistogram().GetSampleCount() != 2 || m.GetHistogram().GetSampleSum() != 1.8 {
		t.Errorf("ocr duration histogram: %v", m)
	}
	if m := find(mfs, "docflow_documents_ingested_total", map[string]string{"channel": "upload"}); m == nil || m.GetCounter().GetValue() != 1 {
		t.Errorf("intake: %v", m)
	}
	if m := find(mfs, "docflow_http_requests_total", map[string]string{"route": "/api/diagnostic/healthz/ready", "status": "200", "method": "GET"}); m == nil {
		t.Errorf("no request series for the health route")
	}
	if m := find(mfs, "docflow_http_requests_total", map[string]string{"route": "/metrics", "status": "401"}); m == nil {
		t.Errorf("no request series for the refused scrapes")
	}
	if m := find(mfs, "docflow_queue_lag_up", nil); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("queue lag look-up: %v", m)
	}
	if find(mfs, "docflow_queue_lag", map[string]string{"topic": "docflow.files.ingested"}) == nil {
		t.Errorf("no lag of the router topic")
	}
	for _, name := range []string{"docflow_analytics_dropped_total", "docflow_analytics_buffered",
		"process_resident_memory_bytes", "process_cpu_seconds_total", "go_goroutines"} {
		if mfs[name] == nil {
			t.Errorf("no %s", name)
		}
	}

	// An administrator's session reads it too.
	jar, _ := cookiejar.New(nil)
	admin := &nethttp.Client{Timeout: 20 * time.Second, Jar: jar}
	resp, err := admin.Post(a.URL+"/login", "application/json", strings.NewReader(`{"username":"admin","password":"admin password"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	if status, _ := scrape(t, admin, a.URL, ""); status != 200 {
		t.Fatalf("admin session: %d", status)
	}
}
