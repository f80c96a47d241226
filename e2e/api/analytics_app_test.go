package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/app/apptest"
)

// TestAnalyticsAPI: the seven analytics endpoints answer the documented
// shape over what the process recorded, and refuse bad windows with 422.
func TestAnalyticsAPI(t *testing.T) {
	a := apptest.New(t, apptest.Options{Role: "api"})
	// Record a little of every kind, then make it visible.
	now := time.Now().UTC()
	for _, m := range []docflow.Metric{
		{Kind: docflow.MetricIntake, Time: now, Channel: "upload", Type: "application/pdf", Status: docflow.IntakeAccepted, Bytes: 10},
		{Kind: docflow.MetricStep, Time: now, StepType: "ocr", Status: docflow.StepFailed, ErrorClass: "timeout", FileID: 5, Duration: time.Second},
		{Kind: docflow.MetricDocument, Time: now, Status: docflow.StepSucceeded, Duration: 2 * time.Second},
		{Kind: docflow.MetricLag, Time: now, Topic: "steps.ocr", Lag: 4},
	} {
		a.Recorder.Record(m)
	}
	if err := a.Recorder.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"overview", "steps", "intake", "errors", "lag", "requests", "integrations"} {
		status, body := get(t, a.URL+"/api/analytics/"+name)
		if status != 200 {
			t.Fatalf("GET /api/analytics/%s: %d %s", name, status, body)
		}
		var out map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, k := range []string{"from", "to", "interval", "series", "totals"} {
			if _, ok := out[k]; !ok {
				t.Errorf("%s: no %q in %s", name, k, body)
			}
		}
		if string(out["interval"]) != "60" {
			t.Errorf("%s: interval %s for the default hour, want 60", name, out["interval"])
		}
		if strings.Contains(body, "null") {
			t.Errorf("%s: null in %s", name, body)
		}
	}
	var ov docflow.OverviewReport
	_, body := get(t, a.URL+"/api/analytics/overview")
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	if ov.Totals.DocsIn != 1 || ov.Totals.DocsOut != 1 || ov.Totals.Backlog != 4 || ov.Totals.Recorder == nil || ov.Totals.Recorder.Written < 4 {
		t.Errorf("overview totals %+v", ov.Totals)
	}
	var er docflow.ErrorsReport
	_, body = get(t, a.URL+"/api/analytics/errors?step_type=ocr")
	if err := json.Unmarshal([]byte(body), &er); err != nil {
		t.Fatal(err)
	}
	if len(er.Totals.Classes) != 1 || er.Totals.Classes[0].SampleFileID != 5 {
		t.Errorf("errors %s", body)
	}

	for _, bad := range []struct{ query, field string }{
		{"from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z", "from"},
		{"from=2020-01-01T00:00:00Z&to=2026-01-01T00:00:00Z&interval=60", "interval"},
		{"interval=30", "interval"},
		{"interval=abc", "interval"},
		{"from=yesterday", "from"},
	} {
		status, body := get(t, a.URL+"/api/analytics/steps?"+bad.query)
		if status != 422 || !strings.Contains(body, `"`+bad.field+`"`) {
			t.Errorf("?%s: %d %s, want 422 naming %s", bad.query, status, body, bad.field)
		}
	}
	// A 90-day range picks a coarse interval (at most 150 buckets).
	status, body := get(t, a.URL+"/api/analytics/requests?from=2026-01-01T00:00:00Z&to=2026-04-01T00:00:00Z")
	if status != 200 || !strings.Contains(body, `"interval":86400`) {
		t.Errorf("90 days: %d %s", status, body)
	}
}
