package docflow

import (
	"context"
	"time"
)

// Bounds of an analytics query (GET /api/analytics/*).
const (
	// AnalyticsMaxBuckets is the most buckets one query may ask for; more
	// is EINVALID (422).
	AnalyticsMaxBuckets = 10_000
	// AnalyticsAutoBuckets is the most buckets an interval chosen for the
	// caller gives: enough for a chart, and few enough that a month reads
	// the six-hour rollups (6 h buckets) and a quarter the daily ones.
	AnalyticsAutoBuckets = 150
	// AnalyticsMinInterval is the finest bucket: the rollups are per minute,
	// and every interval is a whole number of minutes.
	AnalyticsMinInterval = time.Minute
)

// AnalyticsQuery selects what an analytics report covers: the window
// [From, To), cut into buckets of Interval aligned on multiples of Interval
// since the Unix epoch (a bucket's t is its start). StepType narrows
// /steps and /errors; Channel narrows /intake and the overview's
// documents in. Build one with ParseAnalyticsQuery's rules (http does).
type AnalyticsQuery struct {
	From     time.Time
	To       time.Time
	Interval time.Duration
	StepType string
	Channel  string
}

// Analytics answers the operations dashboards from recorded metrics (from
// the per-minute rollups where the store has them). Both analytics stores
// (analytics/clickhouse, analytics/postgres) implement it; q is already
// validated. Series are sorted by t, then by their key fields; lists in
// Totals by their key fields unless said otherwise; empty lists are [],
// not null.
type Analytics interface {
	Overview(ctx context.Context, q AnalyticsQuery) (*OverviewReport, error)
	Steps(ctx context.Context, q AnalyticsQuery) (*StepsReport, error)
	Intake(ctx context.Context, q AnalyticsQuery) (*IntakeReport, error)
	Errors(ctx context.Context, q AnalyticsQuery) (*ErrorsReport, error)
	Lag(ctx context.Context, q AnalyticsQuery) (*LagReport, error)
	Requests(ctx context.Context, q AnalyticsQuery) (*RequestsReport, error)
	Integrations(ctx context.Context, q AnalyticsQuery) (*IntegrationsReport, error)
}

// ReportWindow heads every report: the window and the bucket width in
// seconds.
type ReportWindow struct {
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	Interval int64     `json:"interval"`
}

// Window returns q's window as a report head.
func (q AnalyticsQuery) Window() ReportWindow {
	return ReportWindow{From: q.From.UTC(), To: q.To.UTC(), Interval: int64(q.Interval / time.Second)}
}

// Percentiles of a duration, in milliseconds (0 when nothing was measured).
type Percentiles struct {
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
}

// --- /api/analytics/overview

// OverviewReport: documents in and out, success rate, end-to-end latency,
// backlog.
type OverviewReport struct {
	ReportWindow
	Series []OverviewPoint `json:"series"`
	Totals OverviewTotals  `json:"totals"`
}

// OverviewPoint is one bucket. DocsIn counts accepted intakes; DocsOut
// runs that ended (Completed + Failed); latency is end to end; Backlog is
// the consumer lag summed over topics and partitions (each partition's
// largest sample in the bucket; 0 without samples).
type OverviewPoint struct {
	T         time.Time `json:"t"`
	DocsIn    int64     `json:"docs_in"`
	DocsOut   int64     `json:"docs_out"`
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
	Percentiles
	Backlog int64 `json:"backlog"`
}

// OverviewTotals covers the whole window. SuccessRate is Completed/DocsOut
// (1 when nothing ended). Backlog is the last sampled lag summed over
// partitions. Processes are the latest sample of each process seen in the
// window; Recorder the answering process's own recorder counters.
type OverviewTotals struct {
	DocsIn      int64   `json:"docs_in"`
	DocsOut     int64   `json:"docs_out"`
	Completed   int64   `json:"completed"`
	Failed      int64   `json:"failed"`
	SuccessRate float64 `json:"success_rate"`
	Percentiles
	Backlog   int64           `json:"backlog"`
	Processes []ProcessSample `json:"processes"`
	Recorder  *RecorderStats  `json:"recorder,omitempty"`
}

// ProcessSample is a process's latest resources sample. Dropped is the
// metrics its recorder had dropped by then (cumulative since it started).
type ProcessSample struct {
	Process    string    `json:"process"`
	Role       string    `json:"role"`
	LastSeen   time.Time `json:"last_seen"`
	CPU        float64   `json:"cpu_percent"`
	RSS        int64     `json:"rss_bytes"`
	Goroutines int64     `json:"goroutines"`
	Dropped    int64     `json:"metrics_dropped"`
}

// --- /api/analytics/steps

// StepsReport: per step type throughput, duration percentiles, queue wait,
// error rate and top error classes.
type StepsReport struct {
	ReportWindow
	Series []StepPoint `json:"series"`
	Totals StepTotals  `json:"totals"`
}

// StepPoint is one step type in one bucket (buckets without attempts are
// left out).
type StepPoint struct {
	T        time.Time `json:"t"`
	StepType string    `json:"step_type"`
	Count    int64     `json:"count"`
	Failed   int64     `json:"failed"`
	Percentiles
	QueueWaitP95 float64 `json:"queue_wait_p95_ms"`
}

// StepTotals sums all step types; Steps has one entry per step type.
type StepTotals struct {
	Count     int64           `json:"count"`
	Failed    int64           `json:"failed"`
	ErrorRate float64         `json:"error_rate"`
	Steps     []StepTypeTotal `json:"steps"`
}

// StepTypeTotal is one step type over the window. Throughput is attempts
// per second of the window; TopErrors the five most frequent error classes,
// most frequent first.
type StepTypeTotal struct {
	StepType   string  `json:"step_type"`
	Count      int64   `json:"count"`
	Failed     int64   `json:"failed"`
	ErrorRate  float64 `json:"error_rate"`
	Throughput float64 `json:"throughput_per_s"`
	Percentiles
	QueueWait Percentiles  `json:"queue_wait"`
	BytesIn   int64        `json:"bytes_in"`
	BytesOut  int64        `json:"bytes_out"`
	TopErrors []ErrorCount `json:"top_errors"`
}

// ErrorCount is one error class and how often it occurred.
type ErrorCount struct {
	ErrorClass string `json:"error_class"`
	Count      int64  `json:"count"`
}

// --- /api/analytics/intake

// IntakeReport: documents offered by channel and content type.
type IntakeReport struct {
	ReportWindow
	Series []IntakePoint `json:"series"`
	Totals IntakeTotals  `json:"totals"`
}

// IntakePoint is one channel in one bucket. Count is every offer; Accepted,
// Duplicate, Rejected and Failed split it by outcome.
type IntakePoint struct {
	T         time.Time `json:"t"`
	Channel   string    `json:"channel"`
	Count     int64     `json:"count"`
	Accepted  int64     `json:"accepted"`
	Duplicate int64     `json:"duplicate"`
	Rejected  int64     `json:"rejected"`
	Failed    int64     `json:"failed"`
	Bytes     int64     `json:"bytes"`
}

// IntakeTotals sums the window; Channels has one entry per channel and
// content type.
type IntakeTotals struct {
	Count    int64             `json:"count"`
	Accepted int64             `json:"accepted"`
	Bytes    int64             `json:"bytes"`
	Channels []IntakeTypeTotal `json:"channels"`
}

// IntakeTypeTotal is one channel and content type over the window.
type IntakeTypeTotal struct {
	Channel   string `json:"channel"`
	Type      string `json:"type"`
	Count     int64  `json:"count"`
	Accepted  int64  `json:"accepted"`
	Duplicate int64  `json:"duplicate"`
	Rejected  int64  `json:"rejected"`
	Failed    int64  `json:"failed"`
	Bytes     int64  `json:"bytes"`
	Percentiles
}

// --- /api/analytics/errors

// ErrorsReport: failed step attempts by error class.
type ErrorsReport struct {
	ReportWindow
	Series []ErrorPoint `json:"series"`
	Totals ErrorTotals  `json:"totals"`
}

// ErrorPoint is one error class in one bucket.
type ErrorPoint struct {
	T          time.Time `json:"t"`
	ErrorClass string    `json:"error_class"`
	Count      int64     `json:"count"`
}

// ErrorTotals: Classes one entry per error class and step type, most
// frequent first.
type ErrorTotals struct {
	Count   int64        `json:"count"`
	Classes []ErrorClass `json:"classes"`
}

// ErrorClass is one error class of one step type over the window, with a
// document that failed so (SampleFileID, the latest; 0 when unknown).
type ErrorClass struct {
	ErrorClass   string    `json:"error_class"`
	StepType     string    `json:"step_type"`
	Count        int64     `json:"count"`
	SampleFileID int64     `json:"sample_file_id"`
	LastSeen     time.Time `json:"last_seen"`
}

// --- /api/analytics/lag

// LagReport: consumer lag per topic.
type LagReport struct {
	ReportWindow
	Series []LagPoint `json:"series"`
	Totals LagTotals  `json:"totals"`
}

// LagPoint is one topic in one bucket: the largest sample of each partition
// in the bucket, summed over partitions.
type LagPoint struct {
	T     time.Time `json:"t"`
	Topic string    `json:"topic"`
	Lag   int64     `json:"lag"`
}

// LagTotals: the latest sample of each partition, summed (Lag) and per
// topic.
type LagTotals struct {
	Lag    int64      `json:"lag"`
	Topics []TopicLag `json:"topics"`
}

// TopicLag is a topic's latest lag, in all and per partition.
type TopicLag struct {
	Topic      string         `json:"topic"`
	Lag        int64          `json:"lag"`
	SampledAt  time.Time      `json:"sampled_at"`
	Partitions []PartitionLag `json:"partitions"`
}

// PartitionLag is one partition's latest lag.
type PartitionLag struct {
	Partition int   `json:"partition"`
	Lag       int64 `json:"lag"`
}

// --- /api/analytics/requests

// RequestsReport: HTTP requests per route pattern.
type RequestsReport struct {
	ReportWindow
	Series []RequestPoint `json:"series"`
	Totals RequestTotals  `json:"totals"`
}

// RequestPoint is all routes in one bucket.
type RequestPoint struct {
	T         time.Time `json:"t"`
	Count     int64     `json:"count"`
	Errors5xx int64     `json:"errors_5xx"`
	P99       float64   `json:"p99_ms"`
}

// RequestTotals: Routes one entry per method and route pattern.
type RequestTotals struct {
	Count     int64        `json:"count"`
	Errors5xx int64        `json:"errors_5xx"`
	Routes    []RouteTotal `json:"routes"`
}

// RouteTotal is one method and route pattern over the window; Rate is
// requests per second of the window.
type RouteTotal struct {
	Method    string  `json:"method"`
	Route     string  `json:"route"`
	Count     int64   `json:"count"`
	Rate      float64 `json:"rate_per_s"`
	Errors4xx int64   `json:"errors_4xx"`
	Errors5xx int64   `json:"errors_5xx"`
	Percentiles
}

// --- /api/analytics/integrations

// IntegrationsReport: integration operations and webhook/hook deliveries.
type IntegrationsReport struct {
	ReportWindow
	Series []IntegrationPoint `json:"series"`
	Totals IntegrationTotals  `json:"totals"`
}

// IntegrationPoint is one kind (integration or delivery) and type in one
// bucket.
type IntegrationPoint struct {
	T      time.Time `json:"t"`
	Kind   string    `json:"kind"`
	Type   string    `json:"type"`
	Count  int64     `json:"count"`
	Failed int64     `json:"failed"`
}

// IntegrationTotals: Operations one entry per kind, type and direction.
type IntegrationTotals struct {
	Count      int64              `json:"count"`
	Failed     int64              `json:"failed"`
	Operations []IntegrationTotal `json:"operations"`
}

// IntegrationTotal is one kind, type and direction over the window.
type IntegrationTotal struct {
	Kind      string `json:"kind"`
	Type      string `json:"type"`
	Direction string `json:"direction"`
	Count     int64  `json:"count"`
	Failed    int64  `json:"failed"`
	Bytes     int64  `json:"bytes"`
	Percentiles
}
