//go:build chdb

package chdbcheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chdb-io/chdb-go/chdb"
	"go.yaml.in/yaml/v3"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/clickhouse"
)

// rawSQL gathers every "rawSql" string of a decoded JSON or YAML document.
func rawSQL(v any, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "rawSql" {
				*out = append(*out, s)
				continue
			}
			rawSQL(e, out)
		}
	case []any:
		for _, e := range x {
			rawSQL(e, out)
		}
	}
}

// TestGrafanaOnCurrentEngine runs the Grafana dashboards' and alert rules'
// queries (deploy/grafana; analytics/clickhouse/grafana_test.go runs them on
// the 18.16 server) on a current ClickHouse, their macros expanded as the
// data source plugin would for the last hour.
func TestGrafanaOnCurrentEngine(t *testing.T) {
	var queries []string
	files, _ := filepath.Glob("../../../deploy/grafana/dashboards/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rawSQL(v, &queries)
	}
	b, err := os.ReadFile("../../../deploy/grafana/provisioning/alerting/docflow.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var alerts any
	if err := yaml.Unmarshal(b, &alerts); err != nil {
		t.Fatal(err)
	}
	rawSQL(alerts, &queries)
	if len(queries) < 10 {
		t.Fatalf("only %d queries found in deploy/grafana", len(queries))
	}

	s, err := chdb.NewSession(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(q string) {
		t.Helper()
		res, err := s.Query(q, "TSV")
		if err == nil && res != nil {
			err = res.Error()
		}
		if err != nil {
			t.Errorf("%v\n%s", err, q)
		}
	}
	const db = "docflow_grafana"
	ddl, err := clickhouse.DDL(db)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range ddl {
		run(stmt)
	}
	now := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Second)
	var rows []string
	for _, m := range []docflow.Metric{
		{Kind: docflow.MetricStep, StepType: "ocr", Status: docflow.StepFailed, ErrorClass: "timeout", FileID: 3, Duration: time.Second},
		{Kind: docflow.MetricDocument, Status: "completed", Duration: 3 * time.Second},
		{Kind: docflow.MetricIntake, Channel: "upload", Status: docflow.IntakeAccepted, Bytes: 5},
		{Kind: docflow.MetricRequest, Method: "GET", Route: "/api/files", HTTPStatus: 503},
		{Kind: docflow.MetricIntegration, Type: "s3", Direction: "out", Status: docflow.OutcomeOK},
		{Kind: docflow.MetricLag, Topic: "steps.ocr", Lag: 4},
		{Kind: docflow.MetricProcess, Process: "h:1", Worker: "worker", RSS: 10},
	} {
		m.Time = now
		var vals []string
		for _, v := range analytics.Values(m) {
			vals = append(vals, literal(v))
		}
		rows = append(rows, "("+strings.Join(vals, ", ")+")")
	}
	run("INSERT INTO " + db + ".events (" + analytics.ColumnList + ") VALUES " + strings.Join(rows, ", "))

	timeFilter := regexp.MustCompile(`\$__timeFilter\(([a-z_]+)\)`)
	table := regexp.MustCompile(`\bdocflow\.([A-Za-z_][A-Za-z0-9_]*)`)
	for _, q := range queries {
		q = timeFilter.ReplaceAllString(q, "$1 >= toDateTime(now() - 3600) AND $1 <= toDateTime(now())")
		q = strings.NewReplacer("$__interval_s", "60").Replace(q)
		run(table.ReplaceAllString(q, db+".$1"))
	}
	t.Logf("%d Grafana queries ran on the current engine", len(queries))
}
