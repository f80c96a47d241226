package docflow

import (
	"fmt"
	"math"
	"time"
)

// DefaultAnalyticsWindow is the window of a query that names no from.
const DefaultAnalyticsWindow = time.Hour

// autoIntervals are the bucket widths an interval is chosen from, finest
// first.
var autoIntervals = []time.Duration{
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute,
	30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour,
	12 * time.Hour, 24 * time.Hour, 7 * 24 * time.Hour,
}

// NewAnalyticsQuery checks an analytics window and picks its interval. A
// zero to is now, a zero from is to minus DefaultAnalyticsWindow; a zero
// interval is the finest of autoIntervals giving at most
// AnalyticsAutoBuckets buckets. Errors are EINVALID with the offending
// field: from after to, an interval that is not a whole number of minutes,
// or over AnalyticsMaxBuckets buckets.
func NewAnalyticsQuery(from, to time.Time, interval time.Duration, now time.Time) (AnalyticsQuery, error) {
	if to.IsZero() {
		to = now
	}
	if from.IsZero() {
		from = to.Add(-DefaultAnalyticsWindow)
	}
	from, to = from.UTC(), to.UTC()
	if from.After(to) {
		return AnalyticsQuery{}, invalidField("from", "from is after to")
	}
	if interval == 0 {
		interval = autoIntervals[len(autoIntervals)-1]
		for _, d := range autoIntervals {
			if buckets(from, to, d) <= AnalyticsAutoBuckets {
				interval = d
				break
			}
		}
	}
	if interval < AnalyticsMinInterval || interval%AnalyticsMinInterval != 0 {
		return AnalyticsQuery{}, invalidField("interval", "interval must be a positive multiple of 60 seconds")
	}
	if n := buckets(from, to, interval); n > AnalyticsMaxBuckets {
		return AnalyticsQuery{}, invalidField("interval",
			fmt.Sprintf("interval gives %d buckets; at most %d are allowed", n, AnalyticsMaxBuckets))
	}
	return AnalyticsQuery{From: from, To: to, Interval: interval}, nil
}

// buckets counts the aligned buckets of width d that [from, to) touches,
// at most one more than the span over d. A span longer than a
// time.Duration holds (292 years; to.Sub stops there) is counted in
// seconds, and one beyond int64 seconds counts as too many.
func buckets(from, to time.Time, d time.Duration) int64 {
	if span := to.Sub(from); span < math.MaxInt64 {
		return int64(span/d) + 1
	}
	secs := to.Unix() - from.Unix()
	if secs < 0 || d < time.Second {
		return math.MaxInt64
	}
	return secs/int64(d/time.Second) + 1
}

// Bucket returns the start of the bucket holding t.
func (q AnalyticsQuery) Bucket(t time.Time) time.Time {
	sec := int64(q.Interval / time.Second)
	u := t.Unix()
	return time.Unix(u-((u%sec)+sec)%sec, 0).UTC()
}

func invalidField(field, msg string) error {
	e := Errorf(EINVALID, "%s", msg)
	e.Fields = []FieldError{{Field: field, Message: msg}}
	return e
}
