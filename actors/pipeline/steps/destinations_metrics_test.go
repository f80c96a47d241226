package steps_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"docflow"
	"docflow/actors/pipeline/steps"
	"docflow/analytics"
)

// Every delivery through MeasuredDestinations is one integration metric:
// the provider as type, direction out, the destination's name as target,
// the file's size when delivered, and the outcome with its error class.
func TestMeasuredDestinationsRecordEachDelivery(t *testing.T) {
	src := filepath.Join(t.TempDir(), "report.pdf")
	if err := os.WriteFile(src, []byte("twelve bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	rec := &analytics.Memory{}
	dests := steps.MeasuredDestinations(func(context.Context, *docflow.File) ([]steps.Destination, error) {
		return []steps.Destination{
			steps.LocalFolder{Dir: func() string { return out }},
			steps.LocalFolder{Dir: func() string { return "" }}, // not configured: fails
		}, nil
	}, rec)
	ds, err := dests(context.Background(), &docflow.File{ID: 1})
	if err != nil || len(ds) != 2 {
		t.Fatal(len(ds), err)
	}
	if _, err := ds[0].Deliver(context.Background(), &docflow.File{ID: 1}, src, "report.pdf"); err != nil {
		t.Fatal(err)
	}
	if _, err := ds[1].Deliver(context.Background(), &docflow.File{ID: 1}, src, "report.pdf"); err == nil {
		t.Fatal("delivered to an unset folder")
	}
	got := rec.Metrics(docflow.MetricIntegration)
	if len(got) != 2 {
		t.Fatalf("metrics %+v", got)
	}
	for i, m := range got {
		if m.Type != docflow.MetricTypeLocal || m.Direction != docflow.DirectionOut || m.Target != "local" || m.Duration <= 0 {
			t.Errorf("metric %d: %+v", i, m)
		}
	}
	if got[0].Status != docflow.OutcomeOK || got[0].Bytes != 12 || got[0].ErrorClass != "" {
		t.Errorf("delivered: %+v", got[0])
	}
	if got[1].Status != docflow.OutcomeFailed || got[1].Bytes != 0 || got[1].ErrorClass != docflow.ErrorClassError {
		t.Errorf("failed: %+v", got[1])
	}
	if same := steps.MeasuredDestinations(nil, rec); same != nil {
		t.Error("nil destinations wrapped")
	}
}
