package prom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"docflow"
	"docflow/analytics/prom"
)

// TestRecordKinds: each kind of metric lands in its series, with label
// values kept short and never empty (a request's method one of the
// standard ones or other); samples (lag, process) are left to the
// collectors.
func TestRecordKinds(t *testing.T) {
	r := prom.New()
	long := strings.Repeat("x", 200)
	for _, m := range []docflow.Metric{
		{Kind: docflow.MetricStep, StepType: "ocr", Status: docflow.StepFailed, ErrorClass: long, Duration: time.Second, QueueWait: time.Second},
		{Kind: docflow.MetricDocument, Status: "completed", Duration: 3 * time.Second},
		{Kind: docflow.MetricIntake, Channel: "", Status: docflow.IntakeDuplicate, Bytes: 5},
		{Kind: docflow.MetricIntegration, Type: "s3", Direction: "out", Status: docflow.OutcomeOK},
		{Kind: docflow.MetricDelivery, Type: "document.processed", Status: docflow.OutcomeFailed},
		{Kind: docflow.MetricRequest, Method: "GET", Route: "/api/files", HTTPStatus: 503},
		{Kind: docflow.MetricRequest, Method: "X-INVENTED-1", Route: "other", HTTPStatus: 404},
		{Kind: docflow.MetricRequest, Method: "X-INVENTED-2", Route: "other", HTTPStatus: 404},
		{Kind: docflow.MetricLag, Topic: "t", Lag: 9},
		{Kind: docflow.MetricProcess, Process: "p", RSS: 1},
	} {
		r.Record(m)
	}
	want := `
# HELP docflow_step_attempts_total Step attempts by step type and status (completed, skipped, failed) and error class of a failure.
# TYPE docflow_step_attempts_total counter
docflow_step_attempts_total{error_class="` + long[:64] + `",status="failed",step_type="ocr"} 1
# HELP docflow_documents_processed_total Pipeline runs that ended, by status (completed, failed).
# TYPE docflow_documents_processed_total counter
docflow_documents_processed_total{status="completed"} 1
# HELP docflow_documents_ingested_total Documents taken in, by intake channel and outcome.
# TYPE docflow_documents_ingested_total counter
docflow_documents_ingested_total{channel="none",outcome="duplicate"} 1
# HELP docflow_integration_operations_total Integration operations and webhook deliveries, by kind, type, direction and status.
# TYPE docflow_integration_operations_total counter
docflow_integration_operations_total{direction="none",kind="delivery",status="failed",type="document.processed"} 1
docflow_integration_operations_total{direction="out",kind="integration",status="ok",type="s3"} 1
# HELP docflow_http_requests_total HTTP requests by method (other for a non-standard one), route pattern (other when none matched) and status.
# TYPE docflow_http_requests_total counter
docflow_http_requests_total{method="GET",route="/api/files",status="503"} 1
docflow_http_requests_total{method="other",route="other",status="404"} 2
`
	names := []string{"docflow_step_attempts_total", "docflow_documents_processed_total", "docflow_documents_ingested_total",
		"docflow_integration_operations_total", "docflow_http_requests_total"}
	if err := testutil.GatherAndCompare(r.Registry(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(r.Registry(), "docflow_step_queue_wait_seconds", "docflow_document_duration_seconds"); n != 2 {
		t.Fatalf("histograms: %d series", n)
	}
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestLagCollector: the lag is asked when scraped, kept for a moment, and a
// failed look-up says so while the last answer stays.
func TestLagCollector(t *testing.T) {
	calls := 0
	fail := false
	c := prom.LagCollector(func(context.Context) (map[string]int64, error) {
		calls++
		if fail {
			return nil, errors.New("broker away")
		}
		return map[string]int64{"docflow.steps.ocr": 7}, nil
	})
	want := `
# HELP docflow_queue_lag Messages of a topic not yet committed by its consumer group.
# TYPE docflow_queue_lag gauge
docflow_queue_lag{topic="docflow.steps.ocr"} 7
# HELP docflow_queue_lag_up 1 when the broker answered the last lag look-up, else 0.
# TYPE docflow_queue_lag_up gauge
docflow_queue_lag_up %d
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, "%d", "1", 1))); err != nil {
		t.Fatal(err)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, "%d", "1", 1))); err != nil || calls != 1 {
		t.Fatalf("a second scrape at once asked again (%d calls): %v", calls, err)
	}
	time.Sleep(2100 * time.Millisecond)
	fail = true
	if err := testutil.CollectAndCompare(c, strings.NewReader(strings.Replace(want, "%d", "0", 1))); err != nil || calls != 2 {
		t.Fatalf("after a failed look-up (%d calls): %v", calls, err)
	}
}
