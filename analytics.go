package docflow

import (
	"context"
	"time"
)

// Metric kinds recorded for the operations dashboards.
const (
	MetricStep    = "step"
	MetricIntake  = "intake"
	MetricRequest = "request"
)

// Metric is one analytics row: a step attempt, an intake or an HTTP request.
// Fields that do not apply to a kind stay zero.
type Metric struct {
	Kind       string
	Time       time.Time
	FileID     int64
	RunID      string
	StepType   string
	Status     string // step: completed/failed/skipped; request: HTTP status as text
	Attempt    int
	Duration   time.Duration
	Bytes      int64
	ErrorClass string
	Channel    string // intake channel
	Method     string // request
	Route      string // request route pattern
	HTTPStatus int
	OwnerID    string
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

// StepStat summarises step attempts of one step type.
type StepStat struct {
	StepType    string
	Count       int64 // attempts
	Failed      int64 // attempts with status failed
	AvgDuration time.Duration
}

// RequestStat counts HTTP requests of one method, route pattern and status.
type RequestStat struct {
	Method      string
	Route       string
	HTTPStatus  int
	Count       int64
	AvgDuration time.Duration
}

// IntakeStat counts documents taken in through one channel.
type IntakeStat struct {
	Channel string
	Count   int64
	Bytes   int64
}

// MetricStats answers the operations dashboards' questions over recorded
// metrics. Each window is [from, to); results are sorted by their key fields.
// Metrics still buffered in a Recorder are not yet visible.
type MetricStats interface {
	StepStats(ctx context.Context, from, to time.Time) ([]StepStat, error)
	RequestStats(ctx context.Context, from, to time.Time) ([]RequestStat, error)
	IntakeStats(ctx context.Context, from, to time.Time) ([]IntakeStat, error)
}
