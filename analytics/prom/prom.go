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
	requests     *prometheus.CounterVec
	reqDuration  *prometheus.HistogramVec
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
	r.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
		Help: "HTTP requests by method, route pattern and status."}, []string{"method", "route", "status"})
	r.reqDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
		Help: "HTTP request duration by route pattern.", Buckets: prometheus.DefBuckets}, []string{"route"})
	r.reg.MustRegister(r.ingested, r.ingestedB, r.steps, r.stepDuration, r.stepBytes, r.requests, r.reqDuration,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Registry is what GET /metrics gathers.
func (r *Recorder) Registry() *prometheus.Registry { return r.reg }

// MustRegister adds collectors that sample state when scraped (queue lag,
// the analytics buffer's drops).
func (r *Recorder) MustRegister(cs ...prometheus.Collector) { r.reg.MustRegister(cs...) }

// Record updates the series of m's kind; other kinds are ignored.
func (r *Recorder) Record(m docflow.Metric) {
	switch m.Kind {
	case docflow.MetricIntake:
		ch := label(m.Channel)
		r.ingested.WithLabelValues(ch, label(orDefault(m.Status, "accepted"))).Inc()
		if m.Bytes > 0 {
			r.ingestedB.WithLabelValues(ch).Add(float64(m.Bytes))
		}
	case docflow.MetricStep:
		st := label(m.StepType)
		r.steps.WithLabelValues(st, label(m.Status), label(m.ErrorClass)).Inc()
		r.stepDuration.WithLabelValues(st).Observe(m.Duration.Seconds())
		if m.Bytes > 0 {
			r.stepBytes.WithLabelValues(st).Add(float64(m.Bytes))
		}
	case docflow.MetricRequest:
		route := label(m.Route)
		r.requests.WithLabelValues(label(m.Method), route, strconv.Itoa(m.HTTPStatus)).Inc()
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
