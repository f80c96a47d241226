package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"docflow"
	"docflow/analytics"
	"docflow/analytics/clickhouse"
)

// The Grafana provisioning of docker-compose.yml (deploy/grafana) reads the
// rollup tables these migrations create. Grafana cannot run here, so these
// tests check its files: well-formed, every panel and alert query naming
// tables of the schema, and each query run (its Grafana macros expanded) on
// a migrated database holding a few metrics of every kind.

const (
	grafanaDir   = "../../deploy/grafana"
	grafanaDSUID = "docflow-clickhouse"
)

type grafanaQuery struct {
	where string // panel or rule title
	sql   string
	table bool // a table (else a time series with a t column)
	// alert rules: the threshold of their condition (a "gt" evaluator)
	threshold float64
}

type dashboard struct {
	UID    string         `json:"uid"`
	Title  string         `json:"title"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets []struct {
		RefID     string `json:"refId"`
		RawSQL    string `json:"rawSql"`
		Format    *int   `json:"format"`
		QueryType string `json:"queryType"`
	} `json:"targets"`
}

type alertFile struct {
	APIVersion int `yaml:"apiVersion"`
	Groups     []struct {
		Name     string `yaml:"name"`
		Folder   string `yaml:"folder"`
		Interval string `yaml:"interval"`
		Rules    []struct {
			UID       string `yaml:"uid"`
			Title     string `yaml:"title"`
			Condition string `yaml:"condition"`
			For       string `yaml:"for"`
			Data      []struct {
				RefID         string         `yaml:"refId"`
				DatasourceUID string         `yaml:"datasourceUid"`
				Model         map[string]any `yaml:"model"`
			} `yaml:"data"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// grafanaQueries reads every dashboard and alert rule and checks their
// shape, returning the SQL they send to ClickHouse.
func grafanaQueries(t *testing.T) []grafanaQuery {
	t.Helper()
	var out []grafanaQuery

	// The data source the dashboards and rules name.
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			UID      string         `yaml:"uid"`
			Type     string         `yaml:"type"`
			JSONData map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, filepath.Join(grafanaDir, "provisioning/datasources/clickhouse.yaml"), &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].UID != grafanaDSUID ||
		ds.Datasources[0].Type != "grafana-clickhouse-datasource" || ds.Datasources[0].JSONData["defaultDatabase"] != "docflow" {
		t.Fatalf("data source provisioning: %+v", ds)
	}
	var prov struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Type    string         `yaml:"type"`
			Options map[string]any `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, filepath.Join(grafanaDir, "provisioning/dashboards/docflow.yaml"), &prov)
	if prov.APIVersion != 1 || len(prov.Providers) != 1 || prov.Providers[0].Type != "file" || prov.Providers[0].Options["path"] == nil {
		t.Fatalf("dashboard provisioning: %+v", prov)
	}

	files, _ := filepath.Glob(filepath.Join(grafanaDir, "dashboards/*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboard in deploy/grafana/dashboards")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		dec := json.NewDecoder(strings.NewReader(string(b)))
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: uid %q, title %q, %d panels", f, d.UID, d.Title, len(d.Panels))
		}
		ids := map[int]bool{}
		for _, p := range d.Panels {
			name := fmt.Sprintf("%s: panel %d %q", filepath.Base(f), p.ID, p.Title)
			if ids[p.ID] || p.ID == 0 {
				t.Errorf("%s: id missing or used twice", name)
			}
			ids[p.ID] = true
			if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("%s: bad gridPos %+v", name, p.GridPos)
			}
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != grafanaDSUID || len(p.Targets) == 0 {
				t.Errorf("%s: not a query of the %s data source", name, grafanaDSUID)
				continue
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.RawSQL) == "" || tg.Format == nil {
					t.Errorf("%s: target %s has no rawSql or format", name, tg.RefID)
					continue
				}
				table := *tg.Format == 1
				if table != (p.Type == "table") {
					t.Errorf("%s: format %d on a %s panel", name, *tg.Format, p.Type)
				}
				out = append(out, grafanaQuery{where: name, sql: tg.RawSQL, table: table})
			}
		}
	}

	var alerts alertFile
	readYAML(t, filepath.Join(grafanaDir, "provisioning/alerting/docflow.yaml"), &alerts)
	if alerts.APIVersion != 1 || len(alerts.Groups) == 0 {
		t.Fatalf("alerting provisioning: %+v", alerts)
	}
	var titles []string
	for _, g := range alerts.Groups {
		if g.Name == "" || g.Folder == "" || g.Interval == "" {
			t.Errorf("alert group %+v: name, folder and interval are needed", g.Name)
		}
		for _, r := range g.Rules {
			titles = append(titles, r.Title)
			if _, err := time.ParseDuration(r.For); r.UID == "" || err != nil {
				t.Errorf("rule %q: uid %q, for %q", r.Title, r.UID, r.For)
			}
			refs := map[string]bool{}
			var rule *grafanaQuery
			for _, d := range r.Data {
				refs[d.RefID] = true
				if d.DatasourceUID == "__expr__" {
					if e, _ := d.Model["expression"].(string); !refs[e] {
						t.Errorf("rule %q: %s reads %q, not an earlier query", r.Title, d.RefID, e)
					}
					if d.RefID == r.Condition && rule != nil {
						rule.threshold = gtThreshold(t, r.Title, d.Model)
					}
					continue
				}
				sql, _ := d.Model["rawSql"].(string)
				if d.DatasourceUID != grafanaDSUID || strings.TrimSpace(sql) == "" {
					t.Errorf("rule %q: %s is not a query of %s", r.Title, d.RefID, grafanaDSUID)
					continue
				}
				rule = &grafanaQuery{where: "alert " + r.Title, sql: sql, table: true}
			}
			if rule != nil {
				out = append(out, *rule)
			}
			if !refs[r.Condition] {
				t.Errorf("rule %q: condition %q is none of its refIds", r.Title, r.Condition)
			}
		}
	}
	for _, want := range []string{"Backlog growing for 10 minutes", "Step error rate over 5 %",
		"Step p95 three times its weekly median", "A worker is silent"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no alert rule %q (have %q)", want, titles)
		}
	}
	return out
}

// gtThreshold is the parameter of a threshold expression's "gt" evaluator.
func gtThreshold(t *testing.T, rule string, model map[string]any) float64 {
	t.Helper()
	conds, _ := model["conditions"].([]any)
	if model["type"] != "threshold" || len(conds) != 1 {
		t.Fatalf("rule %q: the condition is not one threshold: %v", rule, model)
	}
	ev, _ := conds[0].(map[string]any)["evaluator"].(map[string]any)
	params, _ := ev["params"].([]any)
	if ev["type"] != "gt" || len(params) != 1 {
		t.Fatalf("rule %q: evaluator %v", rule, ev)
	}
	switch v := params[0].(type) {
	case int:
		return float64(v)
	case float64:
		return v
	}
	t.Fatalf("rule %q: threshold %v", rule, params[0])
	return 0
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

var tableRef = regexp.MustCompile(`\bdocflow\.([A-Za-z_][A-Za-z0-9_]*)`)

// schemaTables lists the tables the migrations create.
func schemaTables(t *testing.T) map[string]bool {
	t.Helper()
	ddl, err := clickhouse.DDL("docflow")
	if err != nil {
		t.Fatal(err)
	}
	create := regexp.MustCompile(`(?i)CREATE (?:TABLE|MATERIALIZED VIEW) IF NOT EXISTS docflow\.([A-Za-z0-9_]+)`)
	out := map[string]bool{}
	for _, stmt := range ddl {
		if m := create.FindStringSubmatch(stmt); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// TestGrafanaProvisioningIsWellFormed needs no server: the files parse,
// and every query names only tables (not views) of the migrations.
func TestGrafanaProvisioningIsWellFormed(t *testing.T) {
	tables := schemaTables(t)
	qs := grafanaQueries(t)
	for _, q := range qs {
		refs := tableRef.FindAllStringSubmatch(q.sql, -1)
		if len(refs) == 0 {
			t.Errorf("%s: names no docflow.<table>", q.where)
		}
		for _, m := range refs {
			if !tables[m[1]] || strings.HasSuffix(m[1], "_mv") {
				t.Errorf("%s: docflow.%s is not a table of the ClickHouse schema", q.where, m[1])
			}
		}
	}
	compose, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"grafana-clickhouse-datasource", "./deploy/grafana/provisioning:/etc/grafana/provisioning",
		"./deploy/grafana/dashboards:/etc/grafana/dashboards"} {
		if !strings.Contains(string(compose), want) {
			t.Errorf("docker-compose.yml does not mention %q", want)
		}
	}
}

// expandMacros replaces the data source plugin's macros and Grafana's
// variables as they would be for the last hour at one-minute buckets, and
// the database name.
func expandMacros(sql, database string) string {
	sql = regexp.MustCompile(`\$__timeFilter\(([a-z_]+)\)`).
		ReplaceAllString(sql, "$1 >= toDateTime(now() - 3600) AND $1 <= toDateTime(now())")
	sql = strings.NewReplacer("$__interval_s", "60", "$__fromTime", "toDateTime(now() - 3600)",
		"$__toTime", "toDateTime(now())").Replace(sql)
	return tableRef.ReplaceAllString(sql, database+".$1")
}

// TestGrafanaQueriesRunOnTheSchema runs every panel and alert query on a
// migrated database holding metrics of every kind: each must run, and
// each panel must find rows.
func TestGrafanaQueriesRunOnTheSchema(t *testing.T) {
	qs := grafanaQueries(t)
	rec, db := open(t, srv.addr, analytics.Options{})
	now := time.Now().Add(-2 * time.Minute)
	for i := range 12 {
		ts := now.Add(-time.Duration(i) * time.Minute)
		for _, m := range []docflow.Metric{
			{Kind: docflow.MetricStep, Time: ts, StepType: "ocr", Status: docflow.StepSucceeded, Duration: 300 * time.Millisecond, QueueWait: time.Second, FileID: 1, Bytes: 10},
			{Kind: docflow.MetricStep, Time: ts, StepType: "ocr", Status: docflow.StepSucceeded, Duration: 250 * time.Millisecond, FileID: 3},
			{Kind: docflow.MetricStep, Time: ts, StepType: "ocr", Status: docflow.StepFailed, ErrorClass: "timeout", Duration: 2 * time.Second, FileID: 2},
			{Kind: docflow.MetricDocument, Time: ts, Status: "completed", Duration: 4 * time.Second, Pipeline: "standard"},
			{Kind: docflow.MetricIntake, Time: ts, Channel: "upload", Type: "application/pdf", Status: docflow.IntakeAccepted, Bytes: 100},
			{Kind: docflow.MetricRequest, Time: ts, Method: "GET", Route: "/api/files", HTTPStatus: 200, Duration: 5 * time.Millisecond},
			{Kind: docflow.MetricIntegration, Time: ts, Type: "s3", Direction: "out", Status: docflow.OutcomeOK, Duration: time.Second},
			{Kind: docflow.MetricLag, Time: ts, Topic: "docflow.steps.ocr", Partition: 0, Lag: int64(100 - i)},
			{Kind: docflow.MetricProcess, Time: ts.Add(-time.Minute), Process: "worker-1:42", Worker: "worker", CPU: 12.5, RSS: 50 << 20, Goroutines: 80},
		} {
			rec.Record(m)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		sql := expandMacros(q.sql, db)
		rows, err := srv.conn.Query(ctx, sql)
		if err != nil {
			t.Errorf("%s: %v\n%s", q.where, err, sql)
			continue
		}
		n := 0
		cols := rows.Columns()
		for rows.Next() {
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
			continue
		}
		if !q.table && (len(cols) == 0 || cols[0] != "t") {
			t.Errorf("%s: a time series must start with its time column t, not %v", q.where, cols)
		}
		if n == 0 {
			t.Errorf("%s: no rows over a database holding every kind of metric\n%s", q.where, sql)
		}
		if strings.HasPrefix(q.where, "alert ") {
			// The seeded metrics break every rule: a backlog that grows, a
			// third of the attempts failing, a p95 far over the median, a
			// process silent for 3 minutes.
			var v float64
			value := "SELECT toFloat64(max(" + cols[len(cols)-1] + ")) FROM (" + sql + ")"
			if err := srv.conn.QueryRow(ctx, value).Scan(&v); err != nil {
				t.Errorf("%s: %v", q.where, err)
			} else if v <= q.threshold {
				t.Errorf("%s: %v, not over its threshold %v, on metrics that break it", q.where, v, q.threshold)
			}
		}
	}
}
