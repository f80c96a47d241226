package docflow

import (
	"testing"
	"time"
)

func TestNewAnalyticsQuery(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 30, 0, time.UTC)
	q, err := NewAnalyticsQuery(time.Time{}, time.Time{}, 0, now)
	if err != nil || !q.To.Equal(now) || !q.From.Equal(now.Add(-time.Hour)) || q.Interval != time.Minute {
		t.Fatalf("defaults: %+v, %v", q, err)
	}
	for _, c := range []struct {
		span time.Duration
		want time.Duration
	}{
		{2 * time.Hour, time.Minute},
		{3 * time.Hour, 2 * time.Minute},
		{6 * time.Hour, 5 * time.Minute},
		{24 * time.Hour, 10 * time.Minute},
		{30 * 24 * time.Hour, 6 * time.Hour},
		{90 * 24 * time.Hour, 24 * time.Hour},
		{20 * 365 * 24 * time.Hour, 7 * 24 * time.Hour},
	} {
		q, err := NewAnalyticsQuery(now.Add(-c.span), now, 0, now)
		if err != nil || q.Interval != c.want {
			t.Errorf("span %v: interval %v (%v), want %v", c.span, q.Interval, err, c.want)
		}
		if n := buckets(now.Add(-c.span), now, q.Interval); n > AnalyticsAutoBuckets && c.want != 7*24*time.Hour {
			t.Errorf("span %v: %d buckets", c.span, n)
		}
	}
	bad := []struct {
		from, to time.Time
		interval time.Duration
		field    string
	}{
		{now, now.Add(-time.Second), 0, "from"},
		{now.Add(-time.Hour), now, 30 * time.Second, "interval"},
		{now.Add(-time.Hour), now, 90 * time.Second, "interval"},
		{now.Add(-8 * 24 * time.Hour), now, time.Minute, "interval"}, // 11,521 buckets
	}
	for _, b := range bad {
		_, err := NewAnalyticsQuery(b.from, b.to, b.interval, now)
		e, ok := err.(*Error)
		if !ok || e.Code != EINVALID || len(e.Fields) != 1 || e.Fields[0].Field != b.field {
			t.Errorf("%v to %v by %v: %v, want EINVALID on %s", b.from, b.to, b.interval, err, b.field)
		}
	}
	// A window longer than a time.Duration holds (292 years) is counted
	// on the calendar: 9,999 years by 300 days are 12,174 buckets, not
	// the 356 of 292 years (found by FuzzAnalyticsQuery).
	long := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	if q, err := NewAnalyticsQuery(time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), long, 300*24*time.Hour, now); err == nil {
		t.Errorf("year 1 to 9999 by 300 days accepted: %+v", q)
	}
	if _, err := NewAnalyticsQuery(now.Add(-6*24*time.Hour), now, time.Minute, now); err != nil {
		t.Errorf("8,641 buckets refused: %v", err)
	}
	q = AnalyticsQuery{Interval: 10 * time.Minute}
	if got := q.Bucket(time.Date(2026, 5, 1, 12, 19, 59, 0, time.UTC)); !got.Equal(time.Date(2026, 5, 1, 12, 10, 0, 0, time.UTC)) {
		t.Errorf("Bucket = %v", got)
	}
}
