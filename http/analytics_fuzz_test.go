package http

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/valyala/fasthttp"

	"docflow"
)

// FuzzAnalyticsParams: the /api/analytics/* query parameters, written by
// a client (encoded) and as raw bytes after them, never panic the parser;
// a refusal is EINVALID naming only the parameters it read; a query it
// accepts has from ≤ to, an interval that is a positive multiple of a
// minute, at most AnalyticsMaxBuckets buckets (counted on the calendar,
// plus one for the seconds' rounding), and filters a report can bind: at
// most maxFilterLen bytes of valid UTF-8 (PostgreSQL refuses anything
// else in a text parameter) without a NUL. Seeds in
// testdata/fuzz/FuzzAnalyticsParams.
func FuzzAnalyticsParams(f *testing.F) {
	f.Add("2026-05-01T10:00:00Z", "2026-05-01T12:00:00Z", "60", "ocr", "upload", "")
	f.Add("", "", "", "", "", "")
	f.Add("2026-05-01", "2026-04-01", "90", "", "", "")
	f.Add("0001-01-01T00:00:01Z", "9999-12-31T00:00:00Z", "25920000", "", "", "")
	f.Add("2026-05-01T10:00", "2026-05-01T10:00:00.123456789+14:00", "-60", "\x00", "\xff", "&interval=120&step_type=%ff")
	f.Add("x", "y", "1e3", strings.Repeat("s", 201), "", "from=2026-01-01&from=2027-01-01")
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := &Server{cfg: Config{Now: func() time.Time { return now }}}
	fields := []string{"from", "to", "interval", "step_type", "channel"}
	f.Fuzz(func(t *testing.T, from, to, interval, stepType, channel, raw string) {
		v := url.Values{}
		for i, x := range []string{from, to, interval, stepType, channel} {
			if x != "" {
				v.Set(fields[i], x)
			}
		}
		var c fasthttp.RequestCtx
		c.Request.SetRequestURI("/api/analytics/steps?" + v.Encode() + "&" + raw)
		q, err := s.analyticsQuery(&c)
		if err != nil {
			e, ok := err.(*docflow.Error)
			if !ok || e.Code != docflow.EINVALID || len(e.Fields) == 0 {
				t.Fatalf("%s: %v", c.QueryArgs(), err)
			}
			for _, fe := range e.Fields {
				if !slices.Contains(fields, fe.Field) {
					t.Fatalf("%s: refused on %q", c.QueryArgs(), fe.Field)
				}
			}
			return
		}
		if q.From.After(q.To) || q.Interval < docflow.AnalyticsMinInterval || q.Interval%docflow.AnalyticsMinInterval != 0 {
			t.Fatalf("%s: accepted %+v", c.QueryArgs(), q)
		}
		if n := (q.To.Unix()-q.From.Unix())/int64(q.Interval/time.Second) + 1; n > docflow.AnalyticsMaxBuckets+1 {
			t.Fatalf("%s: accepted %d buckets", c.QueryArgs(), n)
		}
		for _, f := range []string{q.StepType, q.Channel} {
			if len(f) > maxFilterLen || strings.ContainsRune(f, 0) || !utf8.ValidString(f) || f != strings.TrimSpace(f) {
				t.Fatalf("%s: accepted the filter %q", c.QueryArgs(), f)
			}
		}
	})
}

// A filter that is not UTF-8 is refused (422 on its field), not handed to
// PostgreSQL, which would refuse the report's statement (found by
// FuzzAnalyticsParams).
func TestAnalyticsFilterMustBeUTF8(t *testing.T) {
	s := &Server{cfg: Config{Now: time.Now}}
	var c fasthttp.RequestCtx
	c.Request.SetRequestURI("/api/analytics/steps?channel=%ff%fe")
	_, err := s.analyticsQuery(&c)
	e, ok := err.(*docflow.Error)
	if !ok || e.Code != docflow.EINVALID || len(e.Fields) != 1 || e.Fields[0].Field != "channel" {
		t.Fatalf("%v", err)
	}
}
