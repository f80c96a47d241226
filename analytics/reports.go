package analytics

import (
	"math"
	"sort"
	"sync"
	"time"

	"docflow"
)

// Helpers both stores use to build the docflow.Analytics reports, so that
// the derived figures (rates, top errors, grouping) are computed once.

// MaxErrorClasses bounds the error classes /errors lists.
const MaxErrorClasses = 100

// TopErrors is how many error classes a step type lists.
const TopErrors = 5

// MinuteWindow widens [from, to) to whole minutes, the rollups' grain: a
// row counts when its minute starts in [from, to).
func MinuteWindow(from, to time.Time) (time.Time, time.Time) {
	lo := from.UTC().Truncate(time.Minute)
	hi := to.UTC().Truncate(time.Minute)
	if hi.Before(to) {
		hi = hi.Add(time.Minute)
	}
	return lo, hi
}

// Seconds is the length of q's window in seconds (at least 1).
func Seconds(q docflow.AnalyticsQuery) float64 {
	return math.Max(q.To.Sub(q.From).Seconds(), 1)
}

// Rate is n per second over secs.
func Rate(n int64, secs float64) float64 { return float64(n) / secs }

// Ratio is n/d, or empty when d is 0.
func Ratio(n, d int64, empty float64) float64 {
	if d == 0 {
		return empty
	}
	return float64(n) / float64(d)
}

// ToPercentiles reads [p50, p95, p99]; NaN (no values) reads as 0.
func ToPercentiles(qs []float64) docflow.Percentiles {
	v := func(i int) float64 {
		if i >= len(qs) || math.IsNaN(qs[i]) || math.IsInf(qs[i], 0) {
			return 0
		}
		return qs[i]
	}
	return docflow.Percentiles{P50: v(0), P95: v(1), P99: v(2)}
}

// Buckets gathers points keyed by bucket start; safe for concurrent use
// through Update.
type Buckets[P any] struct {
	mu   sync.Mutex
	make func(t time.Time) P
	by   map[int64]*P
}

// Update calls f on the point of bucket t under the lock.
func (b *Buckets[P]) Update(t time.Time, f func(p *P)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(b.At(t))
}

// Parallel runs fs at once and returns the first error.
func Parallel(fs ...func() error) error {
	errs := make([]error, len(fs))
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// NewBuckets returns Buckets whose new points come from mk.
func NewBuckets[P any](mk func(t time.Time) P) *Buckets[P] {
	return &Buckets[P]{make: mk, by: map[int64]*P{}}
}

// At returns the point of bucket t, made on first use (not for concurrent
// use: see Update).
func (b *Buckets[P]) At(t time.Time) *P {
	k := t.Unix()
	if p, ok := b.by[k]; ok {
		return p
	}
	p := b.make(t.UTC())
	b.by[k] = &p
	return &p
}

// Sorted returns the points by bucket start ([] when none).
func (b *Buckets[P]) Sorted() []P {
	keys := make([]int64, 0, len(b.by))
	for k := range b.by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	out := make([]P, 0, len(keys))
	for _, k := range keys {
		out = append(out, *b.by[k])
	}
	return out
}

// StepError counts failures of one step type and error class.
type StepError struct {
	StepType, ErrorClass string
	Count                int64
}

// FinishSteps fills the derived figures of a steps report whose Steps list
// holds counts and percentiles: totals, error rates, throughput and each
// step type's top error classes (from errs).
func FinishSteps(rep *docflow.StepsReport, q docflow.AnalyticsQuery, errs []StepError) {
	sort.Slice(errs, func(i, j int) bool {
		a, b := errs[i], errs[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.ErrorClass < b.ErrorClass
	})
	secs := Seconds(q)
	for i := range rep.Totals.Steps {
		st := &rep.Totals.Steps[i]
		st.ErrorRate = Ratio(st.Failed, st.Count, 0)
		st.Throughput = Rate(st.Count, secs)
		st.TopErrors = []docflow.ErrorCount{}
		for _, e := range errs {
			if e.StepType == st.StepType && len(st.TopErrors) < TopErrors {
				st.TopErrors = append(st.TopErrors, docflow.ErrorCount{ErrorClass: e.ErrorClass, Count: e.Count})
			}
		}
		rep.Totals.Count += st.Count
		rep.Totals.Failed += st.Failed
	}
	rep.Totals.ErrorRate = Ratio(rep.Totals.Failed, rep.Totals.Count, 0)
}

// PartitionSample is one partition's latest lag sample.
type PartitionSample struct {
	Topic     string
	Partition int
	Lag       int64
	At        time.Time
}

// GroupTopics sums partition samples (sorted by topic, then partition) per
// topic; a topic's SampledAt is its latest sample.
func GroupTopics(parts []PartitionSample) []docflow.TopicLag {
	out := []docflow.TopicLag{}
	for _, p := range parts {
		if len(out) == 0 || out[len(out)-1].Topic != p.Topic {
			out = append(out, docflow.TopicLag{Topic: p.Topic, Partitions: []docflow.PartitionLag{}})
		}
		t := &out[len(out)-1]
		t.Lag += p.Lag
		t.Partitions = append(t.Partitions, docflow.PartitionLag{Partition: p.Partition, Lag: p.Lag})
		if at := p.At.UTC(); at.After(t.SampledAt) {
			t.SampledAt = at
		}
	}
	return out
}
