package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/analytics"
)

// The reports compute, by query over the raw metrics table, what the
// ClickHouse store reads from its per-minute rollups: same window (widened
// to whole minutes), same buckets, same percentiles (percentile_cont
// interpolates as ClickHouse's quantiles do).
//
// NOTE: ORDER BY … COLLATE "C" sorts bytewise, as ClickHouse does, so both
// stores return rows in the same order whatever the database's collation.

var _ docflow.Analytics = Queries{}

const pct = "percentile_cont(ARRAY[0.5, 0.95, 0.99]::float8[]) WITHIN GROUP (ORDER BY "

// span holds a report's SQL fragments and arguments: $1, $2 are the widened
// window, $3 the kind; filters append.
type span struct {
	t    string // the bucket start of ts, a timestamptz
	args []any
	q    docflow.AnalyticsQuery
}

func newSpan(q docflow.AnalyticsQuery, kind string) *span {
	lo, hi := analytics.MinuteWindow(q.From, q.To)
	sec := strconv.FormatInt(int64(q.Interval/time.Second), 10)
	return &span{
		t:    "to_timestamp(floor(extract(epoch FROM ts) / " + sec + ") * " + sec + ") AS t",
		args: []any{lo, hi, kind},
		q:    q,
	}
}

// where is the window and kind condition plus extra (with filters bound).
func (s *span) where(extra string) string {
	return " FROM metrics WHERE ts >= $1 AND ts < $2 AND kind = $3" + extra
}

// filter binds v to column and returns the condition ("" when v is "").
func (s *span) filter(column, v string) string {
	if v == "" {
		return ""
	}
	s.args = append(s.args, v)
	return " AND " + column + " = $" + strconv.Itoa(len(s.args))
}

func (q Queries) each(ctx context.Context, what, query string, args []any, scan func(r pgx.Rows) error) error {
	rows, err := q.pool.Query(ctx, query, args...)
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

func utc(t *time.Time) { *t = t.UTC() }

// Overview answers GET /api/analytics/overview.
func (q Queries) Overview(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.OverviewReport, error) {
	rep := &docflow.OverviewReport{ReportWindow: aq.Window(), Series: []docflow.OverviewPoint{},
		Totals: docflow.OverviewTotals{Processes: []docflow.ProcessSample{}}}
	points := analytics.NewBuckets[docflow.OverviewPoint](func(t time.Time) docflow.OverviewPoint { return docflow.OverviewPoint{T: t} })

	in := newSpan(aq, docflow.MetricIntake)
	chanFilter := in.filter("channel", aq.Channel)
	err := q.each(ctx, "documents in", "SELECT "+in.t+", count(*)"+in.where(" AND status = 'accepted'"+chanFilter)+" GROUP BY 1 ORDER BY 1",
		in.args, func(r pgx.Rows) error {
			var t time.Time
			var n int64
			err := r.Scan(&t, &n)
			points.At(t).DocsIn = n
			rep.Totals.DocsIn += n
			return err
		})
	if err != nil {
		return nil, err
	}
	docs := newSpan(aq, docflow.MetricDocument)
	docCols := "count(*), count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed'), " + pct + "duration_ms)"
	err = q.each(ctx, "documents out", "SELECT "+docs.t+", "+docCols+docs.where("")+" GROUP BY 1 ORDER BY 1", docs.args, func(r pgx.Rows) error {
		var t time.Time
		var out, ok, failed int64
		var qs []float64
		err := r.Scan(&t, &out, &ok, &failed, &qs)
		p := points.At(t)
		p.DocsOut, p.Completed, p.Failed, p.Percentiles = out, ok, failed, analytics.ToPercentiles(qs)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = q.each(ctx, "documents out totals", "SELECT "+docCols+docs.where(""), docs.args, func(r pgx.Rows) error {
		var qs []float64
		tt := &rep.Totals
		err := r.Scan(&tt.DocsOut, &tt.Completed, &tt.Failed, &qs)
		tt.Percentiles = analytics.ToPercentiles(qs)
		return err
	})
	if err != nil {
		return nil, err
	}
	rep.Totals.SuccessRate = analytics.Ratio(rep.Totals.Completed, rep.Totals.DocsOut, 1)
	lag := newSpan(aq, docflow.MetricLag)
	err = q.each(ctx, "backlog", "SELECT t, sum(p)::bigint FROM (SELECT "+lag.t+", topic, topic_partition, max(lag) AS p"+lag.where("")+
		" GROUP BY 1, 2, 3) x GROUP BY t ORDER BY t", lag.args, func(r pgx.Rows) error {
		var t time.Time
		var n int64
		err := r.Scan(&t, &n)
		points.At(t).Backlog = n
		return err
	})
	if err != nil {
		return nil, err
	}
	topics, err := q.latestLag(ctx, aq)
	if err != nil {
		return nil, err
	}
	for _, tl := range topics {
		rep.Totals.Backlog += tl.Lag
	}
	proc := newSpan(aq, docflow.MetricProcess)
	err = q.each(ctx, "processes", "SELECT DISTINCT ON (process COLLATE \"C\", worker COLLATE \"C\") process, worker, ts, cpu, rss, goroutines, dropped"+
		proc.where("")+" ORDER BY process COLLATE \"C\", worker COLLATE \"C\", ts DESC", proc.args, func(r pgx.Rows) error {
		var p docflow.ProcessSample
		err := r.Scan(&p.Process, &p.Role, &p.LastSeen, &p.CPU, &p.RSS, &p.Goroutines, &p.Dropped)
		utc(&p.LastSeen)
		rep.Totals.Processes = append(rep.Totals.Processes, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	rep.Series = points.Sorted()
	return rep, nil
}

// Steps answers GET /api/analytics/steps.
func (q Queries) Steps(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.StepsReport, error) {
	rep := &docflow.StepsReport{ReportWindow: aq.Window(), Series: []docflow.StepPoint{},
		Totals: docflow.StepTotals{Steps: []docflow.StepTypeTotal{}}}
	s := newSpan(aq, docflow.MetricStep)
	filter := s.filter("step_type", aq.StepType)
	cols := "count(*), count(*) FILTER (WHERE status = 'failed'), " + pct + "duration_ms), " + pct + "queue_wait_ms)"
	err := q.each(ctx, "step series", "SELECT "+s.t+", step_type, "+cols+s.where(filter)+
		" GROUP BY 1, 2 ORDER BY 1, step_type COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var p docflow.StepPoint
		var qs, ws []float64
		err := r.Scan(&p.T, &p.StepType, &p.Count, &p.Failed, &qs, &ws)
		utc(&p.T)
		p.Percentiles = analytics.ToPercentiles(qs)
		p.QueueWaitP95 = analytics.ToPercentiles(ws).P95
		rep.Series = append(rep.Series, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = q.each(ctx, "step totals", "SELECT step_type, "+cols+", sum(bytes_in)::bigint, sum(bytes)::bigint"+s.where(filter)+
		" GROUP BY 1 ORDER BY step_type COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var st docflow.StepTypeTotal
		var qs, ws []float64
		err := r.Scan(&st.StepType, &st.Count, &st.Failed, &qs, &ws, &st.BytesIn, &st.BytesOut)
		st.Percentiles, st.QueueWait = analytics.ToPercentiles(qs), analytics.ToPercentiles(ws)
		rep.Totals.Steps = append(rep.Totals.Steps, st)
		return err
	})
	if err != nil {
		return nil, err
	}
	var errs []analytics.StepError
	err = q.each(ctx, "step errors", "SELECT step_type, error_class, count(*)"+s.where(" AND status = 'failed'"+filter)+
		" GROUP BY 1, 2", s.args, func(r pgx.Rows) error {
		var e analytics.StepError
		err := r.Scan(&e.StepType, &e.ErrorClass, &e.Count)
		errs = append(errs, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	analytics.FinishSteps(rep, aq, errs)
	return rep, nil
}

// Intake answers GET /api/analytics/intake.
func (q Queries) Intake(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.IntakeReport, error) {
	rep := &docflow.IntakeReport{ReportWindow: aq.Window(), Series: []docflow.IntakePoint{},
		Totals: docflow.IntakeTotals{Channels: []docflow.IntakeTypeTotal{}}}
	s := newSpan(aq, docflow.MetricIntake)
	filter := s.filter("channel", aq.Channel)
	outcomes := "count(*), count(*) FILTER (WHERE status = 'accepted'), count(*) FILTER (WHERE status = 'duplicate'), " +
		"count(*) FILTER (WHERE status = 'rejected'), count(*) FILTER (WHERE status = 'failed'), sum(bytes)::bigint"
	err := q.each(ctx, "intake series", "SELECT "+s.t+", channel, "+outcomes+s.where(filter)+
		" GROUP BY 1, 2 ORDER BY 1, channel COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var p docflow.IntakePoint
		err := r.Scan(&p.T, &p.Channel, &p.Count, &p.Accepted, &p.Duplicate, &p.Rejected, &p.Failed, &p.Bytes)
		utc(&p.T)
		rep.Series = append(rep.Series, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = q.each(ctx, "intake totals", "SELECT channel, type, "+outcomes+", "+pct+"duration_ms)"+s.where(filter)+
		" GROUP BY 1, 2 ORDER BY channel COLLATE \"C\", type COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var c docflow.IntakeTypeTotal
		var qs []float64
		err := r.Scan(&c.Channel, &c.Type, &c.Count, &c.Accepted, &c.Duplicate, &c.Rejected, &c.Failed, &c.Bytes, &qs)
		c.Percentiles = analytics.ToPercentiles(qs)
		rep.Totals.Channels = append(rep.Totals.Channels, c)
		rep.Totals.Count += c.Count
		rep.Totals.Accepted += c.Accepted
		rep.Totals.Bytes += c.Bytes
		return err
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// Errors answers GET /api/analytics/errors.
func (q Queries) Errors(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.ErrorsReport, error) {
	rep := &docflow.ErrorsReport{ReportWindow: aq.Window(), Series: []docflow.ErrorPoint{},
		Totals: docflow.ErrorTotals{Classes: []docflow.ErrorClass{}}}
	s := newSpan(aq, docflow.MetricStep)
	where := s.where(" AND status = 'failed'" + s.filter("step_type", aq.StepType))
	err := q.each(ctx, "error series", "SELECT "+s.t+", error_class, count(*)"+where+
		" GROUP BY 1, 2 ORDER BY 1, error_class COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var p docflow.ErrorPoint
		err := r.Scan(&p.T, &p.ErrorClass, &p.Count)
		utc(&p.T)
		rep.Series = append(rep.Series, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = q.each(ctx, "error classes", "SELECT error_class, step_type, count(*) AS c, (array_agg(file_id ORDER BY ts DESC))[1], max(ts)"+where+
		" GROUP BY 1, 2 ORDER BY c DESC, error_class COLLATE \"C\", step_type COLLATE \"C\" LIMIT "+strconv.Itoa(analytics.MaxErrorClasses), s.args, func(r pgx.Rows) error {
		var e docflow.ErrorClass
		err := r.Scan(&e.ErrorClass, &e.StepType, &e.Count, &e.SampleFileID, &e.LastSeen)
		utc(&e.LastSeen)
		rep.Totals.Classes = append(rep.Totals.Classes, e)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = q.each(ctx, "error count", "SELECT count(*)"+where, s.args, func(r pgx.Rows) error { return r.Scan(&rep.Totals.Count) })
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// latestLag returns each topic's latest sampled lag in the window.
func (q Queries) latestLag(ctx context.Context, aq docflow.AnalyticsQuery) ([]docflow.TopicLag, error) {
	s := newSpan(aq, docflow.MetricLag)
	var parts []analytics.PartitionSample
	err := q.each(ctx, "latest lag", "SELECT DISTINCT ON (topic COLLATE \"C\", topic_partition) topic, topic_partition, lag, ts"+s.where("")+
		" ORDER BY topic COLLATE \"C\", topic_partition, ts DESC", s.args, func(r pgx.Rows) error {
		var p analytics.PartitionSample
		var part int32
		err := r.Scan(&p.Topic, &part, &p.Lag, &p.At)
		p.Partition = int(part)
		parts = append(parts, p)
		return err
	})
	return analytics.GroupTopics(parts), err
}

// Lag answers GET /api/analytics/lag.
func (q Queries) Lag(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.LagReport, error) {
	rep := &docflow.LagReport{ReportWindow: aq.Window(), Series: []docflow.LagPoint{}}
	s := newSpan(aq, docflow.MetricLag)
	err := q.each(ctx, "lag series", "SELECT t, topic, sum(p)::bigint FROM (SELECT "+s.t+", topic, topic_partition, max(lag) AS p"+s.where("")+
		" GROUP BY 1, 2, 3) x GROUP BY 1, 2 ORDER BY 1, topic COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var p docflow.LagPoint
		err := r.Scan(&p.T, &p.Topic, &p.Lag)
		utc(&p.T)
		rep.Series = append(rep.Series, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	topics, err := q.latestLag(ctx, aq)
	if err != nil {
		return nil, err
	}
	rep.Totals.Topics = topics
	for _, t := range topics {
		rep.Totals.Lag += t.Lag
	}
	return rep, nil
}

// Requests answers GET /api/analytics/requests.
func (q Queries) Requests(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.RequestsReport, error) {
	rep := &docflow.RequestsReport{ReportWindow: aq.Window(), Series: []docflow.RequestPoint{},
		Totals: docflow.RequestTotals{Routes: []docflow.RouteTotal{}}}
	s := newSpan(aq, docflow.MetricRequest)
	err := q.each(ctx, "request series", "SELECT "+s.t+", count(*), count(*) FILTER (WHERE http_status >= 500), "+pct+"duration_ms)"+s.where("")+
		" GROUP BY 1 ORDER BY 1", s.args, func(r pgx.Rows) error {
		var p docflow.RequestPoint
		var qs []float64
		err := r.Scan(&p.T, &p.Count, &p.Errors5xx, &qs)
		utc(&p.T)
		p.P99 = analytics.ToPercentiles(qs).P99
		rep.Series = append(rep.Series, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	secs := analytics.Seconds(aq)
	err = q.each(ctx, "request routes", "SELECT method, route, count(*), count(*) FILTER (WHERE http_status >= 400 AND http_status < 500), "+
		"count(*) FILTER (WHERE http_status >= 500), "+pct+"duration_ms)"+s.where("")+
		" GROUP BY 1, 2 ORDER BY route COLLATE \"C\", method COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var rt docflow.RouteTotal
		var qs []float64
		err := r.Scan(&rt.Method, &rt.Route, &rt.Count, &rt.Errors4xx, &rt.Errors5xx, &qs)
		rt.Percentiles, rt.Rate = analytics.ToPercentiles(qs), analytics.Rate(rt.Count, secs)
		rep.Totals.Routes = append(rep.Totals.Routes, rt)
		rep.Totals.Count += rt.Count
		rep.Totals.Errors5xx += rt.Errors5xx
		return err
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}

// Integrations answers GET /api/analytics/integrations.
func (q Queries) Integrations(ctx context.Context, aq docflow.AnalyticsQuery) (*docflow.IntegrationsReport, error) {
	rep := &docflow.IntegrationsReport{ReportWindow: aq.Window(), Series: []docflow.IntegrationPoint{},
		Totals: docflow.IntegrationTotals{Operations: []docflow.IntegrationTotal{}}}
	s := newSpan(aq, docflow.MetricIntegration)
	s.args = append(s.args, docflow.MetricDelivery)
	where := " FROM metrics WHERE ts >= $1 AND ts < $2 AND kind IN ($3, $4)"
	failed := "count(*) FILTER (WHERE status = '" + docflow.OutcomeFailed + "')"
	err := q.each(ctx, "integration series", "SELECT "+s.t+", kind, type, count(*), "+failed+where+
		" GROUP BY 1, 2, 3 ORDER BY 1, kind COLLATE \"C\", type COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var p docflow.IntegrationPoint
		err := r.Scan(&p.T, &p.Kind, &p.Type, &p.Count, &p.Failed)
		utc(&p.T)
		rep.Series = append(rep.Series, p)
		return err
	})
	if err != nil {
		return nil, err
	}
	err = q.each(ctx, "integration totals", "SELECT kind, type, direction, count(*), "+failed+", sum(bytes)::bigint, "+pct+"duration_ms)"+where+
		" GROUP BY 1, 2, 3 ORDER BY kind COLLATE \"C\", type COLLATE \"C\", direction COLLATE \"C\"", s.args, func(r pgx.Rows) error {
		var o docflow.IntegrationTotal
		var qs []float64
		err := r.Scan(&o.Kind, &o.Type, &o.Direction, &o.Count, &o.Failed, &o.Bytes, &qs)
		o.Percentiles = analytics.ToPercentiles(qs)
		rep.Totals.Operations = append(rep.Totals.Operations, o)
		rep.Totals.Count += o.Count
		rep.Totals.Failed += o.Failed
		return err
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
