// Package prom keeps the core operations series in Prometheus form: a
// docflow.Recorder that updates counters and histograms as metrics are
// recorded, beside the analytics backend (analytics.Multi), and the
// registry that GET /metrics serves.
package prom

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"docflow"
)

// Namespace prefixes every series docflow exports.
const Namespace = "docflow"

// maxLabelLen bounds a label value, so a hostile or careless value cannot
// grow a series name without end.
const maxLabelLen = 64

// stepBuckets spans what a step takes: a millisecond check to a long OCR.
var stepBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// Recorder updates Prometheus series for every metric recorded. Record is
// a few atomic additions: it never blocks and never fails.
type Recorder struct {
	reg *prometheus.Registry

	ingested     *prometheus.CounterVec
	ingestedB    *prometheus.CounterVec
	steps        *prometheus.CounterVec
	stepDuration *prometheus.HistogramVec
	stepBytes    *prometheus.CounterVec
	queueWait    *prometheus.HistogramVec
	documents    *prometheus.CounterVec
	docDuration  prometheus.Histogram
	requests     *prometheus.CounterVec
	reqDuration  *prometheus.HistogramVec
	operations   *prometheus.CounterVec
}

var _ docflow.Recorder = (*Recorder)(nil)

// New builds a Recorder on its own registry, with the Go runtime and
// process collectors (CPU, resident memory, goroutines, open files).
func New() *Recorder {
	r := &Recorder{reg: prometheus.NewRegistry()}
	r.ingested = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "documents_ingested_total",
		Help: "Documents taken in, by intake channel and outcome."}, []string{"channel", "outcome"})
	r.ingestedB = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "documents_ingested_bytes_total",
		Help: "Bytes taken in, by intake channel."}, []string{"channel"})
	r.steps = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "step_attempts_total",
		Help: "Step attempts by step type and status (completed, skipped, failed) and error class of a failure."},
		[]string{"step_type", "status", "error_class"})
	r.stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "step_duration_seconds",
		Help: "Duration of step attempts, by step type.", Buckets: stepBuckets}, []string{"step_type"})
	r.stepBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "step_bytes_total",
		Help: "Bytes the step attempts produced, by step type."}, []string{"step_type"})
	r.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "step_queue_wait_seconds",
		Help: "Time a step task waited in its queue before an attempt started, by step type.", Buckets: stepBuckets}, []string{"step_type"})
	r.documents = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "documents_processed_total",
		Help: "Pipeline runs that ended, by status (completed, failed)."}, []string{"status"})
	r.docDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "document_duration_seconds",
		Help: "End-to-end time of a pipeline run, from intake to its end.", Buckets: stepBuckets})
	r.operations = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "integration_operations_total",
		Help: "Integration operations and webhook deliveries, by kind, type, direction and status."},
		[]string{"kind", "type", "direction", "status"})
	r.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
		Help: "HTTP requests by method (other for a non-standard one), route pattern (other when none matched) and status."}, []string{"method", "route", "status"})
	r.reqDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
		Help: "HTTP request duration by route pattern.", Buckets: prometheus.DefBuckets}, []string{"route"})
	r.reg.MustRegister(r.ingested, r.ingestedB, r.steps, r.stepDuration, r.stepBytes, r.queueWait, r.documents, r.docDuration,
		r.requests, r.reqDuration, r.operations,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Registry is what GET /metrics gathers.
func (r *Recorder) Registry() *prometheus.Registry { return r.reg }

// MustRegister adds collectors that sample state when scraped (queue lag,
// the analytics buffer's drops).
func (r *Recorder) MustRegister(cs ...prometheus.Collector) { r.reg.MustRegister(cs...) }

// Record updates the series of m's kind. Lag and process samples are
// ignored: a scrape reads the lag (LagCollector) and this process's
// resources (the process collector) when it happens.
func (r *Recorder) Record(m docflow.Metric) {
	switch m.Kind {
	case docflow.MetricIntake:
		ch := label(m.Channel)
		r.ingested.WithLabelValues(ch, label(orDefault(m.Status, docflow.IntakeAccepted))).Inc()
		if m.Bytes > 0 {
			r.ingestedB.WithLabelValues(ch).Add(float64(m.Bytes))
		}
	case docflow.MetricStep:
		st := label(m.StepType)
		r.steps.WithLabelValues(st, label(m.Status), label(m.ErrorClass)).Inc()
		r.stepDuration.WithLabelValues(st).Observe(m.Duration.Seconds())
		if m.QueueWait > 0 {
			r.queueWait.WithLabelValues(st).Observe(m.QueueWait.Seconds())
		}
		if m.Bytes > 0 {
			r.stepBytes.WithLabelValues(st).Add(float64(m.Bytes))
		}
	case docflow.MetricDocument:
		r.documents.WithLabelValues(label(m.Status)).Inc()
		r.docDuration.Observe(m.Duration.Seconds())
	case docflow.MetricIntegration, docflow.MetricDelivery:
		r.operations.WithLabelValues(m.Kind, label(m.Type), label(m.Direction), label(m.Status)).Inc()
	case docflow.MetricRequest:
		route := label(m.Route)
		r.requests.WithLabelValues(docflow.MetricMethod(m.Method), route, strconv.Itoa(m.HTTPStatus)).Inc()
		r.reqDuration.WithLabelValues(route).Observe(m.Duration.Seconds())
	}
}

// Flush has nothing to write: series live in memory until scraped.
func (r *Recorder) Flush(context.Context) error { return nil }

// Ping always answers: the registry is in-process.
func (r *Recorder) Ping(context.Context) error { return nil }

// Close releases nothing.
func (r *Recorder) Close() error { return nil }

// GaugeFunc is a gauge sampled when scraped.
func GaugeFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, f)
}

// CounterFunc is a counter sampled when scraped.
func CounterFunc(name, help string, f func() float64) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, f)
}

// label keeps a label value short and never empty.
func label(s string) string {
	if s == "" {
		return "none"
	}
	if len(s) > maxLabelLen {
		return s[:maxLabelLen]
	}
	return s
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
