package analytics

import (
	"testing"
	"time"

	"docflow"
)

func TestValuesMatchColumns(t *testing.T) {
	v := Values(docflow.Metric{Kind: docflow.MetricRequest, Route: "/a\x00b\xff", Duration: 1500 * time.Microsecond,
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))})
	if len(v) != len(Columns()) {
		t.Fatalf("%d values for %d columns", len(v), len(Columns()))
	}
	if got := v[12]; got != "/ab\uFFFD" {
		t.Errorf("route stored as %q, want NUL removed and invalid UTF-8 replaced", got)
	}
	if got := v[7]; got != 1.5 {
		t.Errorf("duration_ms = %v, want 1.5", got)
	}
	if got := v[1].(time.Time); got.Location() != time.UTC || got.Hour() != 2 {
		t.Errorf("ts = %v, want UTC", got)
	}
	if d := MillisDuration(DurationMillis(1234567 * time.Nanosecond)); d != 1235*time.Microsecond {
		t.Errorf("duration round trip = %v", d)
	}
}
