// Package deploy_test checks the production stack's files without docker
// or a cluster: docker-compose.yml loaded as `docker compose` would
// (compose-go), the Prometheus configuration and its rules (promtool), the
// Kubernetes manifests of deploy/k8s built with kustomize's library and
// decoded strictly into their Kubernetes types (k8s_test.go, with KEDA's
// ScaledObject in k8s_keda_test.go), and, when GRAFANA_URL is set, a live
// Grafana provisioned from deploy/grafana.
package deploy_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// env is a complete deploy/env.example, filled in.
var env = map[string]string{
	"SESSION_SECRET":         strings.Repeat("s", 48),
	"ADMIN_PASSWORD":         "admin-password",
	"CLICKHOUSE_USER":        "docflow",
	"CLICKHOUSE_PASSWORD":    "ch-password",
	"GRAFANA_ADMIN_PASSWORD": "grafana-password",
	"METRICS_TOKEN":          strings.Repeat("m", 32),
}

func load(t *testing.T, env map[string]string, profiles ...string) (*types.Project, error) {
	t.Helper()
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"../docker-compose.yml"},
		cli.WithName("docflow"), cli.WithWorkingDirectory(".."), cli.WithEnv(kv), cli.WithProfiles(profiles))
	if err != nil {
		t.Fatal(err)
	}
	return cli.ProjectFromOptions(context.Background(), opts)
}

func environment(t *testing.T, p *types.Project, service string) map[string]string {
	t.Helper()
	s, ok := p.Services[service]
	if !ok {
		t.Fatalf("no service %s", service)
	}
	m := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			m[k] = *v
		}
	}
	return m
}

// TestComposeStack: the default stack runs the stores, one api, two
// workers exposing /metrics and Grafana; the secrets come from the
// environment, interpolated into every service that needs them.
func TestComposeStack(t *testing.T) {
	p, err := load(t, env)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range p.Services {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"api", "clickhouse", "elasticsearch", "grafana", "kafka", "migrate", "postgres", "worker"}
	if !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v (prometheus only with its profile)", names, want)
	}
	for _, v := range []string{"pg-data", "kafka-data", "es-data", "ch-data", "docflow-data", "grafana-data", "prometheus-data"} {
		if _, ok := p.Volumes[v]; !ok {
			t.Errorf("no volume %s", v)
		}
	}
	for _, svc := range []string{"api", "worker", "migrate"} {
		e := environment(t, p, svc)
		if e["CLICKHOUSE_USER"] != "docflow" || e["CLICKHOUSE_PASSWORD"] != "ch-password" ||
			e["SESSION_SECRET"] != env["SESSION_SECRET"] || e["METRICS_TOKEN"] != env["METRICS_TOKEN"] || e["CLICKHOUSE_URL"] == "" {
			t.Errorf("%s environment: %v", svc, e)
		}
		if strings.Contains(e["CLICKHOUSE_URL"], "ch-password") {
			t.Errorf("%s: the ClickHouse password is written into CLICKHOUSE_URL", svc)
		}
	}
	if e := environment(t, p, "worker"); e["WORKER_METRICS_ADDR"] != "0.0.0.0:9100" {
		t.Errorf("worker WORKER_METRICS_ADDR = %q", e["WORKER_METRICS_ADDR"])
	}
	if w := p.Services["worker"]; w.Deploy == nil || w.Deploy.Replicas == nil || *w.Deploy.Replicas != 2 || len(w.Ports) != 0 {
		t.Errorf("worker: deploy %+v, ports %v (two replicas, nothing published)", w.Deploy, w.Ports)
	}
	if e := environment(t, p, "clickhouse"); e["CLICKHOUSE_USER"] != "docflow" || e["CLICKHOUSE_PASSWORD"] != "ch-password" {
		t.Errorf("clickhouse environment: %v", e)
	}
	g := environment(t, p, "grafana")
	if g["GF_SECURITY_ADMIN_PASSWORD"] != "grafana-password" || g["CLICKHOUSE_PASSWORD"] != "ch-password" || g["GF_AUTH_ANONYMOUS_ENABLED"] != "false" {
		t.Errorf("grafana environment: %v", g)
	}
	mounts := map[string]string{}
	for _, v := range p.Services["grafana"].Volumes {
		mounts[v.Target] = v.Source
	}
	for target, dir := range map[string]string{"/etc/grafana/provisioning": "deploy/grafana/provisioning", "/etc/grafana/dashboards": "deploy/grafana/dashboards"} {
		if !strings.HasSuffix(mounts[target], dir) {
			t.Errorf("grafana mounts %q at %s, want %s", mounts[target], target, dir)
		}
	}
}

// The prometheus profile adds Prometheus with deploy/prometheus and the
// metrics token as a secret read from METRICS_TOKEN.
func TestComposePrometheusProfile(t *testing.T) {
	p, err := load(t, env, "prometheus")
	if err != nil {
		t.Fatal(err)
	}
	s, ok := p.Services["prometheus"]
	if !ok {
		t.Fatal("no prometheus service with the prometheus profile")
	}
	if len(s.Secrets) != 1 || s.Secrets[0].Source != "metrics_token" {
		t.Errorf("prometheus secrets %+v", s.Secrets)
	}
	if sec := p.Secrets["metrics_token"]; sec.Environment != "METRICS_TOKEN" {
		t.Errorf("secret metrics_token: %+v", sec)
	}
	found := false
	for _, v := range s.Volumes {
		found = found || (v.Target == "/etc/prometheus" && strings.HasSuffix(v.Source, "deploy/prometheus"))
	}
	if !found {
		t.Errorf("prometheus volumes %+v lack deploy/prometheus", s.Volumes)
	}
}

// A missing secret stops `docker compose` with its name, rather than
// starting a stack with an empty password.
func TestComposeRequiresSecrets(t *testing.T) {
	for _, key := range []string{"SESSION_SECRET", "ADMIN_PASSWORD", "CLICKHOUSE_PASSWORD", "GRAFANA_ADMIN_PASSWORD", "METRICS_TOKEN"} {
		e := map[string]string{}
		for k, v := range env {
			if k != key {
				e[k] = v
			}
		}
		if _, err := load(t, e); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("without %s: %v", key, err)
		}
	}
}

// deploy/env.example names every variable the compose file requires, and
// holds no value for a secret.
func TestEnvExample(t *testing.T) {
	b, err := os.ReadFile("env.example")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			vals[k] = v
		}
	}
	for k := range env {
		v, ok := vals[k]
		if !ok {
			t.Errorf("env.example lacks %s", k)
		}
		if k != "CLICKHOUSE_USER" && v != "" {
			t.Errorf("env.example gives the secret %s a value", k)
		}
	}
}
