package deploy_test

import (
	"os/exec"
	"testing"
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
