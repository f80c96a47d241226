package docflow

import (
	"context"
	"time"
)

// Metric kinds recorded for the operations dashboards. Each kind fills the
// Metric fields named in its comment; the others stay zero.
const (
	// MetricStep: one step attempt. StepType, Pipeline, Worker, Status
	// (completed/failed/skipped), Duration, QueueWait, Attempt, BytesIn,
	// Bytes (out), ErrorClass, FileID, RunID, OwnerID.
	MetricStep = "step"
	// MetricIntake: one document offered at intake. Channel, Type (content
	// type), Bytes, Status (an Intake* outcome), Duration, FileID, OwnerID.
	MetricIntake = "intake"
	// MetricRequest: one HTTP request. Method (MetricMethod), Route (the
	// route pattern, MetricOther when no route matched), HTTPStatus,
	// Status (the status as text), Duration, OwnerID.
	MetricRequest = "request"
	// MetricDocument: a pipeline run that ended. Status (completed/failed),
	// Duration (end to end: intake to the run's end), Pipeline, FileID,
	// RunID, ErrorClass of the failing step.
	MetricDocument = "document"
	// MetricIntegration: one integration operation. Type (the integration
	// type, or a MetricType*), Direction (DirectionIn/Out), Target (the
	// integration's id, or the host or channel kind), Status (ok/failed),
	// Duration, Bytes, ErrorClass (MetricErrorClass). IntegrationMetric
	// builds one: each IMAP poll, destination delivery, SMTP send and
	// admin notification channel send.
	MetricIntegration = "integration"
	// MetricDelivery: one webhook or hook delivery attempt. Type (the event
	// name), Target (the hook's id), Status (ok/failed), HTTPStatus,
	// Attempt, Duration, Bytes, ErrorClass.
	MetricDelivery = "delivery"
	// MetricLag: one consumer-lag sample. Topic, Partition, Lag (messages
	// behind the high watermark), Worker (the consumer group).
	MetricLag = "lag"
	// MetricProcess: one process-resources sample. Process, Worker (the
	// role), CPU (percent of one core since the last sample), RSS (bytes),
	// Goroutines, Dropped (metrics this process's recorder has dropped since
	// it started).
	MetricProcess = "process"
)

// Outcomes of a MetricIntake (its Status).
const (
	IntakeAccepted  = "accepted"
	IntakeDuplicate = "duplicate"
	IntakeRejected  = "rejected" // refused input: too large, unsupported, over quota
	IntakeFailed    = "failed"   // the server failed
)

// Outcomes of a MetricIntegration or MetricDelivery (their Status).
const (
	OutcomeOK     = "ok"
	OutcomeFailed = "failed"
)

// Metric is one analytics row. Fields that do not apply to its Kind stay
// zero; see the Metric* kinds for which fields each fills.
type Metric struct {
	Kind       string
	Time       time.Time
	FileID     int64
	RunID      string
	StepType   string
	Pipeline   string
	Worker     string
	Status     string
	Attempt    int
	Duration   time.Duration
	QueueWait  time.Duration
	BytesIn    int64
	Bytes      int64 // bytes out (step), bytes taken in (intake), bytes moved
	ErrorClass string
	Channel    string // intake channel
	Type       string // intake content type, integration type, delivery event
	Direction  string // integration: in or out
	Target     string // integration or hook id
	Method     string // request
	Route      string // request route pattern
	HTTPStatus int
	OwnerID    string
	Topic      string // lag
	Partition  int
	Lag        int64
	Process    string // process sample: host:pid
	CPU        float64
	RSS        int64
	Goroutines int
	Dropped    int64
}

// Recorder records metrics off the hot path (implementations batch).
// Record never blocks for I/O; it may drop under overload and count drops.
type Recorder interface {
	Record(m Metric)
	// Flush writes what is buffered.
	Flush(ctx context.Context) error
	Ping(ctx context.Context) error
	Close() error
}

// RecorderStats are a recorder's counters since it started: every metric
// handed to Record is written, dropped (full buffer, or unwritten at
// close), rejected (refused by the store for good) or still buffered.
type RecorderStats struct {
	Recorded    int64 `json:"recorded"`
	Written     int64 `json:"written"`
	Dropped     int64 `json:"dropped"`
	Rejected    int64 `json:"rejected"`
	WriteErrors int64 `json:"write_errors"`
	Buffered    int64 `json:"buffered"`
}

// MetricOther is a request metric's Method for a method outside the
// standard ones, and its Route for a request no route matched (404, 405):
// the client chooses both, and every distinct value recorded would be a
// series of its own, without end.
const MetricOther = "other"

// MetricMethod is method as a request metric records it: GET, HEAD, POST,
// PUT, PATCH, DELETE or OPTIONS, else MetricOther.
func MetricMethod(method string) string {
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
		return method
	}
	return MetricOther
}
