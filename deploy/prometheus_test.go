package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"docflow"
	"docflow/analytics/prom"
)

// promtool checks deploy/prometheus: the configuration's syntax, the alert
// rules, and their unit tests (alerts_test.yml: each alert fires on series
// that should fire it). promtool comes with Debian's prometheus package
// (scripts/install-deps.sh test).
func TestPrometheusRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (scripts/install-deps.sh test installs Debian's prometheus package)")
	}
	for _, args := range [][]string{
		{"check", "config", "--syntax-only", "prometheus/prometheus.yml"},
		{"check", "rules", "prometheus/alerts.yml"},
		{"test", "rules", "prometheus/alerts_test.yml"},
	} {
		if out, err := exec.Command(promtool, args...).CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// Every docflow series the Prometheus rules read is one that GET /metrics
// exports (analytics/prom), so a renamed series cannot silence an alert.
func TestPrometheusRulesReadExportedSeries(t *testing.T) {
	rules, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	r := prom.New()
	for _, m := range []docflow.Metric{
		{Kind: docflow.MetricStep, StepType: "ocr", Status: "completed", Duration: time.Second},
		{Kind: docflow.MetricIntake, Channel: "upload"},
	} {
		r.Record(m)
	}
	r.MustRegister(prom.LagCollector(func(context.Context) (map[string]int64, error) {
		return map[string]int64{"t": 1}, nil
	}))
	mfs, err := r.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, mf := range mfs {
		exported[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[mf.GetName()+suffix] = true
			}
		}
	}
	for _, name := range regexp.MustCompile(`\bdocflow_[a-z_]+`).FindAllString(string(rules), -1) {
		if !exported[name] {
			t.Errorf("alerts.yml reads %s, which /metrics does not export", name)
		}
	}
}
