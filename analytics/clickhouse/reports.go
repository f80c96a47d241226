package clickhouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
	"docflow/analytics"
)

var _ docflow.Analytics = Queries{}

// reportSettings are the settings of every report query. A report's
// queries read a few thousand rollup rows each and run at once (see
// analytics.Parallel), so a query's own reading threads only cost: with
// one thread each, a 30-day /steps or /overview took a fifth less time on
// two cores (18.16). The rollups' blocks are read again by every refresh
// of a dashboard: the server's cache of decompressed blocks spares
// decompressing them each time. (The driver copies the map before it adds
// to it, so one map serves every query.)
var reportSettings = ch.Settings{"max_threads": 1, "use_uncompressed_cache": 1}

// each runs query and calls scan for every row.
func (q Queries) each(ctx context.Context, what, query string, args []any, scan func(r driver.Rows) error) error {
	rows, err := q.conn.Query(ch.Context(ctx, ch.WithSettings(reportSettings)), query, args...)
	if err != nil {
		return fmt.Errorf("query %s: %w", what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			return fmt.Errorf("read %s: %w", what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	return nil
}

// Overview answers GET /api/analytics/overview from documents_1m,
// intake_1m, lag_1m and process_1m.
func (q Queries) Overview(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.OverviewReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.OverviewReport{ReportWindow: aq.Window(), Series: []docflow.OverviewPoint{},
		Totals: docflow.OverviewTotals{Processes: []docflow.ProcessSample{}}}
	points := analytics.NewBuckets[docflow.OverviewPoint](func(t time.Time) docflow.OverviewPoint { return docflow.OverviewPoint{T: t} })

	chanWhere, chanArgs := "", []any{}
	if aq.Channel != "" {
		chanWhere, chanArgs = " AND channel = ?", []any{aq.Channel}
	}
	docCols := "toInt64(countMerge(n)), toInt64(countMergeIf(n, status = 'completed')), toInt64(countMergeIf(n, status = 'failed'))"
	var topics []docflow.TopicLag
	seriesPct, totalPct := pcts{}, pcts{}
	procs := map[[2]string]*docflow.ProcessSample{}
	// NOTE: the queries run at once: each is a round trip of its own.
	err := analytics.Parallel(func() error {
		return q.eachSeries(ctx, "documents in", s, chanArgs, func(s span) string {
			return "SELECT " + s.t + ", toInt64(countMerge(n)) FROM " + s.src("intake") + " AND status = 'accepted'" + chanWhere + " GROUP BY t ORDER BY t"
		}, func(r rowScanner) error {
			var t time.Time
			var n int64
			err := r.Scan(&t, &n)
			points.Update(t, func(p *docflow.OverviewPoint) { p.DocsIn = n })
			rep.Totals.DocsIn += n
			return err
		})
	}, func() error {
		return q.eachSeries(ctx, "documents out", s, nil, func(s span) string {
			return "SELECT " + s.t + ", " + docCols + " FROM " + s.src("documents") + " GROUP BY t ORDER BY t"
		}, func(r rowScanner) error {
			var t time.Time
			var out, ok, failed int64
			err := r.Scan(&t, &out, &ok, &failed)
			points.Update(t, func(p *docflow.OverviewPoint) { p.DocsOut, p.Completed, p.Failed = out, ok, failed })
			// The totals are the series' sums (this query alone adds to them).
			tt := &rep.Totals
			tt.DocsOut, tt.Completed, tt.Failed = tt.DocsOut+out, tt.Completed+ok, tt.Failed+failed
			return err
		})
	}, func() error {
		return q.percentiles(ctx, s, "", pctAsk{documentDur, true, 0, seriesPct}, pctAsk{documentDur, false, 0, totalPct})
	}, func() error {
		series, latest, err := q.lag(ctx, s)
		for _, lp := range series {
			points.Update(lp.T, func(p *docflow.OverviewPoint) { p.Backlog += lp.Lag })
		}
		topics = latest
		return err
	}, func() error {
		// Each process's latest sample of each bucket, the latest of
		// them kept: a bucket's rows are kept as the series' are.
		return q.eachSeries(ctx, "processes", s, nil, func(s span) string {
			return "SELECT " + s.t + ", process, worker, maxMerge(at), argMaxMerge(cpu), argMaxMerge(rss), argMaxMerge(goroutines), argMaxMerge(dropped) FROM " +
				s.src("process") + " GROUP BY t, process, worker ORDER BY t"
		}, func(r rowScanner) error {
			var p docflow.ProcessSample
			var t time.Time
			if err := r.Scan(&t, &p.Process, &p.Role, &p.LastSeen, &p.CPU, &p.RSS, &p.Goroutines, &p.Dropped); err != nil {
				return err
			}
			p.LastSeen = p.LastSeen.UTC()
			k := [2]string{p.Process, p.Role}
			if l := procs[k]; l == nil || p.LastSeen.After(l.LastSeen) {
				procs[k] = &p
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	for _, p := range procs {
		rep.Totals.Processes = append(rep.Totals.Processes, *p)
	}
	slices.SortFunc(rep.Totals.Processes, func(a, b docflow.ProcessSample) int {
		return cmp.Or(cmp.Compare(a.Process, b.Process), cmp.Compare(a.Role, b.Role))
	})
	rep.Totals.SuccessRate = analytics.Ratio(rep.Totals.Completed, rep.Totals.DocsOut, 1)
	for _, tl := range topics {
		rep.Totals.Backlog += tl.Lag
	}
	rep.Series = points.Sorted()
	for i := range rep.Series {
		rep.Series[i].Percentiles = seriesPct.at(rep.Series[i].T)
	}
	rep.Totals.Percentiles = totalPct.at(time.Time{})
	return rep, nil
}

// Steps answers GET /api/analytics/steps from steps_1m.
func (q Queries) Steps(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.StepsReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.StepsReport{ReportWindow: aq.Window(), Series: []docflow.StepPoint{},
		Totals: docflow.StepTotals{Steps: []docflow.StepTypeTotal{}}}
	filter, args := "", []any{}
	if aq.StepType != "" {
		filter, args = " AND step_type = ?", []any{aq.StepType}
	}
	var errs []analytics.StepError
	durs, waits, totalDurs, totalWaits := pcts{}, pcts{}, pcts{}, pcts{}
	// NOTE: the queries run at once: each is a round trip of its own.
	totals := map[string]*docflow.StepTypeTotal{}
	failed := map[analytics.StepError]int64{}
	err := analytics.Parallel(func() error {
		// One pass for the series, the totals and the error classes.
		return q.eachSeries(ctx, "step counts", s, args, func(s span) string {
			return "SELECT " + s.t + ", step_type, if(status = 'failed', error_class, '') AS class, toInt64(countMerge(n)), " +
				"toInt64(countMergeIf(n, status = 'failed')), sumMerge(bytes_in), sumMerge(bytes_out) FROM " +
				s.srcCols("steps", "step_type, minute, status, error_class, n, bytes_in, bytes_out") + filter +
				" GROUP BY t, step_type, class ORDER BY t, step_type"
		}, func(r rowScanner) error {
			var p docflow.StepPoint
			var class string
			var in, out int64
			if err := r.Scan(&p.T, &p.StepType, &class, &p.Count, &p.Failed, &in, &out); err != nil {
				return err
			}
			p.T = p.T.UTC()
			if n := len(rep.Series); n > 0 && rep.Series[n-1].T.Equal(p.T) && rep.Series[n-1].StepType == p.StepType {
				rep.Series[n-1].Count += p.Count
				rep.Series[n-1].Failed += p.Failed
			} else {
				rep.Series = append(rep.Series, p)
			}
			st := totals[p.StepType]
			if st == nil {
				st = &docflow.StepTypeTotal{StepType: p.StepType}
				totals[p.StepType] = st
			}
			st.Count, st.Failed, st.BytesIn, st.BytesOut = st.Count+p.Count, st.Failed+p.Failed, st.BytesIn+in, st.BytesOut+out
			if p.Failed > 0 {
				failed[analytics.StepError{StepType: p.StepType, ErrorClass: class}] += p.Failed
			}
			return nil
		})
	}, func() error {
		if s.pctRollup() {
			// Histograms: one read of the units not kept, for both.
			return q.percentiles(ctx, s, aq.StepType, pctAsk{stepDur, true, 1, durs}, pctAsk{stepDur, false, 1, totalDurs},
				pctAsk{stepWait, true, 1, waits}, pctAsk{stepWait, false, 1, totalWaits})
		}
		// Durations and queue waits apart: merging the per-minute states
		// is the heaviest work of the reports, split over two queries that
		// the server's cores run at once.
		return analytics.Parallel(func() error {
			return q.percentiles(ctx, s, aq.StepType, pctAsk{stepDur, true, 1, durs}, pctAsk{stepDur, false, 1, totalDurs})
		}, func() error {
			return q.percentiles(ctx, s, aq.StepType, pctAsk{stepWait, true, 1, waits}, pctAsk{stepWait, false, 1, totalWaits})
		})
	})
	if err != nil {
		return nil, err
	}
	for e, n := range failed {
		e.Count = n
		errs = append(errs, e)
	}
	for _, st := range totals {
		rep.Totals.Steps = append(rep.Totals.Steps, *st)
	}
	sort.Slice(rep.Totals.Steps, func(i, j int) bool { return rep.Totals.Steps[i].StepType < rep.Totals.Steps[j].StepType })
	for i := range rep.Series {
		p := &rep.Series[i]
		p.Percentiles, p.QueueWaitP95 = durs.at(p.T, p.StepType), waits.at(p.T, p.StepType).P95
	}
	for i := range rep.Totals.Steps {
		st := &rep.Totals.Steps[i]
		st.Percentiles, st.QueueWait = totalDurs.at(time.Time{}, st.StepType), totalWaits.at(time.Time{}, st.StepType)
	}
	analytics.FinishSteps(rep, aq, errs)
	return rep, nil
}

// Intake answers GET /api/analytics/intake from intake_1m.
func (q Queries) Intake(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.IntakeReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.IntakeReport{ReportWindow: aq.Window(), Series: []docflow.IntakePoint{},
		Totals: docflow.IntakeTotals{Channels: []docflow.IntakeTypeTotal{}}}
	filter, args := "", []any{}
	if aq.Channel != "" {
		filter, args = " AND channel = ?", []any{aq.Channel}
	}
	outcomes := "toInt64(countMerge(n)), toInt64(countMergeIf(n, status = 'accepted')), toInt64(countMergeIf(n, status = 'duplicate')), " +
		"toInt64(countMergeIf(n, status = 'rejected')), toInt64(countMergeIf(n, status = 'failed')), sumMerge(bytes)"
	durs := pcts{}
	byType := map[[2]string]*docflow.IntakeTypeTotal{}
	// NOTE: the queries run at once: each is a round trip of its own.
	err := analytics.Parallel(func() error {
		// One pass for the series and the totals.
		return q.eachSeries(ctx, "intake", s, args, func(s span) string {
			return "SELECT " + s.t + ", channel, type, " + outcomes + " FROM " + s.src("intake") + filter +
				" GROUP BY t, channel, type ORDER BY t, channel"
		}, func(r rowScanner) error {
			var p docflow.IntakePoint
			var typ string
			if err := r.Scan(&p.T, &p.Channel, &typ, &p.Count, &p.Accepted, &p.Duplicate, &p.Rejected, &p.Failed, &p.Bytes); err != nil {
				return err
			}
			p.T = p.T.UTC()
			if n := len(rep.Series); n > 0 && rep.Series[n-1].T.Equal(p.T) && rep.Series[n-1].Channel == p.Channel {
				l := &rep.Series[n-1]
				l.Count, l.Accepted, l.Duplicate, l.Rejected, l.Failed, l.Bytes = l.Count+p.Count, l.Accepted+p.Accepted,
					l.Duplicate+p.Duplicate, l.Rejected+p.Rejected, l.Failed+p.Failed, l.Bytes+p.Bytes
			} else {
				rep.Series = append(rep.Series, p)
			}
			k := [2]string{p.Channel, typ}
			if byType[k] == nil {
				byType[k] = &docflow.IntakeTypeTotal{Channel: p.Channel, Type: typ}
			}
			c := byType[k]
			c.Count, c.Accepted, c.Duplicate, c.Rejected, c.Failed, c.Bytes = c.Count+p.Count, c.Accepted+p.Accepted,
				c.Duplicate+p.Duplicate, c.Rejected+p.Rejected, c.Failed+p.Failed, c.Bytes+p.Bytes
			rep.Totals.Count += p.Count
			rep.Totals.Accepted += p.Accepted
			rep.Totals.Bytes += p.Bytes
			return nil
		})
	}, func() error {
		return q.percentiles(ctx, s, aq.Channel, pctAsk{intakeDur, false, 2, durs})
	})
	if err != nil {
		return nil, err
	}
	for _, c := range byType {
		c.Percentiles = durs.at(time.Time{}, c.Channel, c.Type)
		rep.Totals.Channels = append(rep.Totals.Channels, *c)
	}
	slices.SortFunc(rep.Totals.Channels, func(a, b docflow.IntakeTypeTotal) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.Type, b.Type))
	})
	return rep, nil
}

// Errors answers GET /api/analytics/errors from the failed rows of steps_1m.
func (q Queries) Errors(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.ErrorsReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.ErrorsReport{ReportWindow: aq.Window(), Series: []docflow.ErrorPoint{},
		Totals: docflow.ErrorTotals{Classes: []docflow.ErrorClass{}}}
	filter, args := "", []any{}
	if aq.StepType != "" {
		filter, args = " AND step_type = ?", []any{aq.StepType}
	}
	where := " AND status = 'failed'" + filter
	type key struct{ class, step string }
	classes := map[key]*docflow.ErrorClass{}
	// One pass for the series, the classes and the count.
	err := q.eachSeries(ctx, "errors", s, args, func(s span) string {
		return "SELECT " + s.t + ", error_class, step_type, toInt64(countMerge(n)), argMaxMerge(sample), maxMerge(last) FROM " +
			s.src("steps") + where + " GROUP BY t, error_class, step_type ORDER BY t, error_class"
	}, func(r rowScanner) error {
		var p docflow.ErrorPoint
		var e docflow.ErrorClass
		if err := r.Scan(&p.T, &p.ErrorClass, &e.StepType, &p.Count, &e.SampleFileID, &e.LastSeen); err != nil {
			return err
		}
		p.T = p.T.UTC()
		if n := len(rep.Series); n > 0 && rep.Series[n-1].T.Equal(p.T) && rep.Series[n-1].ErrorClass == p.ErrorClass {
			rep.Series[n-1].Count += p.Count
		} else {
			rep.Series = append(rep.Series, p)
		}
		rep.Totals.Count += p.Count
		c := classes[key{p.ErrorClass, e.StepType}]
		if c == nil {
			c = &docflow.ErrorClass{ErrorClass: p.ErrorClass, StepType: e.StepType}
			classes[key{p.ErrorClass, e.StepType}] = c
		}
		c.Count += p.Count
		if e.LastSeen.After(c.LastSeen) {
			c.SampleFileID, c.LastSeen = e.SampleFileID, e.LastSeen.UTC()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, c := range classes {
		rep.Totals.Classes = append(rep.Totals.Classes, *c)
	}
	sort.Slice(rep.Totals.Classes, func(i, j int) bool {
		a, b := rep.Totals.Classes[i], rep.Totals.Classes[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.ErrorClass != b.ErrorClass {
			return a.ErrorClass < b.ErrorClass
		}
		return a.StepType < b.StepType
	})
	rep.Totals.Classes = rep.Totals.Classes[:min(len(rep.Totals.Classes), analytics.MaxErrorClasses)]
	return rep, nil
}

// lag returns, in one pass over lag_1m (lag_1h), each bucket's peak lag
// per topic (the sum of its partitions' peaks) and each topic's latest
// sampled lag in the window.
func (q Queries) lag(ctx context.Context, s span) ([]docflow.LagPoint, []docflow.TopicLag, error) {
	series := []docflow.LagPoint{}
	type key struct {
		topic string
		part  int32
	}
	latest := map[key]*analytics.PartitionSample{}
	err := q.eachSeries(ctx, "lag", s, nil, func(s span) string {
		return "SELECT " + s.t + ", topic, topic_partition, toInt64(maxMerge(peak)), argMaxMerge(last), maxMerge(at) FROM " +
			s.src("lag") + " GROUP BY t, topic, topic_partition ORDER BY t, topic"
	}, func(r rowScanner) error {
		var p docflow.LagPoint
		var part int32
		var last int64
		var at time.Time
		if err := r.Scan(&p.T, &p.Topic, &part, &p.Lag, &last, &at); err != nil {
			return err
		}
		p.T = p.T.UTC()
		if n := len(series); n > 0 && series[n-1].T.Equal(p.T) && series[n-1].Topic == p.Topic {
			series[n-1].Lag += p.Lag
		} else {
			series = append(series, p)
		}
		k := key{p.Topic, part}
		if l := latest[k]; l == nil || at.After(l.At) {
			latest[k] = &analytics.PartitionSample{Topic: p.Topic, Partition: int(part), Lag: last, At: at}
		}
		return nil
	})
	parts := make([]analytics.PartitionSample, 0, len(latest))
	for _, p := range latest {
		parts = append(parts, *p)
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Topic != parts[j].Topic {
			return parts[i].Topic < parts[j].Topic
		}
		return parts[i].Partition < parts[j].Partition
	})
	return series, analytics.GroupTopics(parts), err
}

// Lag answers GET /api/analytics/lag from lag_1m.
func (q Queries) Lag(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.LagReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.LagReport{ReportWindow: aq.Window(), Series: []docflow.LagPoint{}}
	series, topics, err := q.lag(ctx, s)
	if err != nil {
		return nil, err
	}
	rep.Series, rep.Totals.Topics = series, topics
	for _, t := range topics {
		rep.Totals.Lag += t.Lag
	}
	return rep, nil
}

// Requests answers GET /api/analytics/requests from requests_1m.
func (q Queries) Requests(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.RequestsReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.RequestsReport{ReportWindow: aq.Window(), Series: []docflow.RequestPoint{},
		Totals: docflow.RequestTotals{Routes: []docflow.RouteTotal{}}}
	secs := analytics.Seconds(aq)
	series, routes := pcts{}, pcts{}
	byRoute := map[[2]string]*docflow.RouteTotal{}
	// NOTE: the queries run at once: each is a round trip of its own.
	err := analytics.Parallel(func() error {
		// One pass for the series and the routes.
		return q.eachSeries(ctx, "requests", s, nil, func(s span) string {
			return "SELECT " + s.t + ", method, route, toInt64(countMerge(n)), toInt64(countMergeIf(n, http_status >= 400 AND http_status < 500)), " +
				"toInt64(countMergeIf(n, http_status >= 500)) FROM " + s.src("requests") + " GROUP BY t, method, route ORDER BY t"
		}, func(r rowScanner) error {
			var p docflow.RequestPoint
			var rt docflow.RouteTotal
			if err := r.Scan(&p.T, &rt.Method, &rt.Route, &p.Count, &rt.Errors4xx, &p.Errors5xx); err != nil {
				return err
			}
			p.T = p.T.UTC()
			if n := len(rep.Series); n > 0 && rep.Series[n-1].T.Equal(p.T) {
				rep.Series[n-1].Count += p.Count
				rep.Series[n-1].Errors5xx += p.Errors5xx
			} else {
				rep.Series = append(rep.Series, p)
			}
			k := [2]string{rt.Method, rt.Route}
			if byRoute[k] == nil {
				byRoute[k] = &docflow.RouteTotal{Method: rt.Method, Route: rt.Route}
			}
			t := byRoute[k]
			t.Count, t.Errors4xx, t.Errors5xx = t.Count+p.Count, t.Errors4xx+rt.Errors4xx, t.Errors5xx+p.Errors5xx
			rep.Totals.Count += p.Count
			rep.Totals.Errors5xx += p.Errors5xx
			return nil
		})
	}, func() error {
		return q.percentiles(ctx, s, "", pctAsk{requestDur, true, 0, series}, pctAsk{requestDur, false, 2, routes})
	})
	if err != nil {
		return nil, err
	}
	for _, rt := range byRoute {
		rt.Rate = analytics.Rate(rt.Count, secs)
		rep.Totals.Routes = append(rep.Totals.Routes, *rt)
	}
	sort.Slice(rep.Totals.Routes, func(i, j int) bool {
		a, b := rep.Totals.Routes[i], rep.Totals.Routes[j]
		if a.Route != b.Route {
			return a.Route < b.Route
		}
		return a.Method < b.Method
	})
	for i := range rep.Series {
		rep.Series[i].P99 = series.at(rep.Series[i].T).P99
	}
	for i := range rep.Totals.Routes {
		rt := &rep.Totals.Routes[i]
		rt.Percentiles = routes.at(time.Time{}, rt.Method, rt.Route)
	}
	return rep, nil
}

// Integrations answers GET /api/analytics/integrations from integrations_1m.
func (q Queries) Integrations(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.IntegrationsReport, error) {
	s := newSpan(aq, q.database)
	rep := &docflow.IntegrationsReport{ReportWindow: aq.Window(), Series: []docflow.IntegrationPoint{},
		Totals: docflow.IntegrationTotals{Operations: []docflow.IntegrationTotal{}}}
	failed := "toInt64(countMergeIf(n, status = '" + docflow.OutcomeFailed + "'))"
	durs := pcts{}
	ops := map[[3]string]*docflow.IntegrationTotal{}
	// NOTE: the queries run at once: each is a round trip of its own.
	err := analytics.Parallel(func() error {
		// One pass for the series and the totals.
		return q.eachSeries(ctx, "integrations", s, nil, func(s span) string {
			return "SELECT " + s.t + ", kind, type, direction, toInt64(countMerge(n)), " + failed + ", sumMerge(bytes) FROM " +
				s.src("integrations") + " GROUP BY t, kind, type, direction ORDER BY t, kind, type"
		}, func(r rowScanner) error {
			var p docflow.IntegrationPoint
			var dir string
			var bytes int64
			if err := r.Scan(&p.T, &p.Kind, &p.Type, &dir, &p.Count, &p.Failed, &bytes); err != nil {
				return err
			}
			p.T = p.T.UTC()
			if n := len(rep.Series); n > 0 && rep.Series[n-1].T.Equal(p.T) && rep.Series[n-1].Kind == p.Kind && rep.Series[n-1].Type == p.Type {
				rep.Series[n-1].Count += p.Count
				rep.Series[n-1].Failed += p.Failed
			} else {
				rep.Series = append(rep.Series, p)
			}
			k := [3]string{p.Kind, p.Type, dir}
			if ops[k] == nil {
				ops[k] = &docflow.IntegrationTotal{Kind: p.Kind, Type: p.Type, Direction: dir}
			}
			o := ops[k]
			o.Count, o.Failed, o.Bytes = o.Count+p.Count, o.Failed+p.Failed, o.Bytes+bytes
			rep.Totals.Count += p.Count
			rep.Totals.Failed += p.Failed
			return nil
		})
	}, func() error {
		return q.percentiles(ctx, s, "", pctAsk{integDur, false, 3, durs})
	})
	if err != nil {
		return nil, err
	}
	for _, o := range ops {
		o.Percentiles = durs.at(time.Time{}, o.Kind, o.Type, o.Direction)
		rep.Totals.Operations = append(rep.Totals.Operations, *o)
	}
	sort.Slice(rep.Totals.Operations, func(i, j int) bool {
		a, b := rep.Totals.Operations[i], rep.Totals.Operations[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Type != b.Type {
			return a.Type < b.Type
		}
		return a.Direction < b.Direction
	})
	return rep, nil
}
