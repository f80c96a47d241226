package prom

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// LagFunc reports the consumer lag of each topic: messages produced and not
// yet committed by the topic's consumer group (pipeline.Inspector.Lags).
type LagFunc func(ctx context.Context) (map[string]int64, error)

// lagCollector asks for the lag when scraped, under a timeout, and keeps the
// last answer for a few seconds so that several scrapers cost one look-up.
type lagCollector struct {
	lags    LagFunc
	timeout time.Duration
	keep    time.Duration
	desc    *prometheus.Desc
	errDesc *prometheus.Desc

	mu     sync.Mutex
	at     time.Time
	last   map[string]int64
	failed bool
}

// LagCollector exports docflow_queue_lag{topic} from lags, and
// docflow_queue_lag_up (0 when the last look-up failed).
func LagCollector(lags LagFunc) prometheus.Collector {
	return &lagCollector{lags: lags, timeout: 3 * time.Second, keep: 2 * time.Second,
		desc: prometheus.NewDesc(Namespace+"_queue_lag", "Messages of a topic not yet committed by its consumer group.",
			[]string{"topic"}, nil),
		errDesc: prometheus.NewDesc(Namespace+"_queue_lag_up", "1 when the broker answered the last lag look-up, else 0.",
			nil, nil)}
}

func (l *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- l.desc
	ch <- l.errDesc
}

func (l *lagCollector) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if time.Since(l.at) > l.keep {
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		m, err := l.lags(ctx)
		cancel()
		l.at, l.failed = time.Now(), err != nil
		if err == nil {
			l.last = m
		}
	}
	up := 1.0
	if l.failed {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(l.errDesc, prometheus.GaugeValue, up)
	for topic, n := range l.last {
		ch <- prometheus.MustNewConstMetric(l.desc, prometheus.GaugeValue, float64(n), label(topic))
	}
}
