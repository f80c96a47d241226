package deploy_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestGrafanaLive checks a Grafana started from this stack (GRAFANA_URL,
// e.g. http://localhost:3000, and GRAFANA_ADMIN_PASSWORD): the ClickHouse
// data source answers its health check, the dashboard and the alert rules
// were provisioned. Without GRAFANA_URL it skips: no Grafana runs here.
func TestGrafanaLive(t *testing.T) {
	base := strings.TrimSuffix(os.Getenv("GRAFANA_URL"), "/")
	if base == "" {
		t.Skip("GRAFANA_URL not set (a Grafana of `docker compose up`, with GRAFANA_ADMIN_PASSWORD)")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	get := func(path string, v any) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		req.SetBasicAuth("admin", os.Getenv("GRAFANA_ADMIN_PASSWORD"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		if v != nil {
			if err := json.NewDecoder(resp.Body).Decode(v); err != nil && resp.StatusCode == http.StatusOK {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		return resp.StatusCode
	}
	var health struct{ Status, Message string }
	if code := get("/api/datasources/uid/docflow-clickhouse/health", &health); code != http.StatusOK || health.Status != "OK" {
		t.Errorf("ClickHouse data source health: %d %+v", code, health)
	}
	var dash struct {
		Dashboard struct{ Panels []json.RawMessage } `json:"dashboard"`
	}
	if code := get("/api/dashboards/uid/docflow-operations", &dash); code != http.StatusOK || len(dash.Dashboard.Panels) == 0 {
		t.Errorf("dashboard docflow-operations: %d, %d panels", code, len(dash.Dashboard.Panels))
	}
	for _, uid := range []string{"docflow-backlog-growing", "docflow-error-rate", "docflow-step-slow", "docflow-worker-silent"} {
		if code := get("/api/v1/provisioning/alert-rules/"+uid, nil); code != http.StatusOK {
			t.Errorf("alert rule %s: %d", uid, code)
		}
	}
}
