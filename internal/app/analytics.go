package app

import (
	"context"
	"fmt"
	"time"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/analytics"
	chanalytics "docflow/analytics/clickhouse"
	pganalytics "docflow/analytics/postgres"
)

// retentionEvery is how often old metrics are dropped.
const retentionEvery = time.Hour

// startRecorder records metrics in ClickHouse when CLICKHOUSE_URL is set,
// else in PostgreSQL; with ANALYTICS_ENABLED=false nothing is recorded and
// the analytics API reads what PostgreSQL holds. Either store keeps
// ANALYTICS_RETENTION_DAYS days, and holds at most ANALYTICS_BUFFER_ROWS
// metrics in memory while unreachable.
func (m *App) startRecorder(ctx context.Context) error {
	days := docflow.AnalyticsRetentionDays.Get(m.Settings)
	opts := analytics.Options{Logger: &m.Log}.Bounded(docflow.AnalyticsBufferRows.Get(m.Settings))
	if !docflow.AnalyticsEnabled.Get(m.Settings) {
		m.Recorder = analytics.Nop{}
		q, err := pganalytics.NewQueries(m.DB.Pool)
		if err != nil {
			return err
		}
		m.Reports = q
		m.Log.Info().Msg("analytics recording is off (ANALYTICS_ENABLED=false)")
		return nil
	}
	if u := docflow.ClickHouseURL.Get(m.Settings); u != "" {
		// NOTE: Offline: a process starts while ClickHouse is down (it
		// holds metrics within ANALYTICS_BUFFER_ROWS and connects when
		// ClickHouse answers); a server that refuses (a wrong password)
		// still stops it.
		rec, err := chanalytics.Open(ctx, chanalytics.Config{URL: u,
			User: docflow.ClickHouseUser.Get(m.Settings), Password: docflow.ClickHousePassword.Get(m.Settings), RetentionDays: days, RetentionEvery: retentionEvery,
			Offline: true}, opts)
		if err != nil {
			return fmt.Errorf("connect ClickHouse at %s: %w (unset CLICKHOUSE_URL to record metrics in PostgreSQL)", RedactURL(u), err)
		}
		m.Recorder, m.Reports, m.RecorderStats = rec, rec, rec.Stats
		m.onClose("ClickHouse recorder", func(context.Context) error { return rec.Close() })
		m.Log.Info().Str("url", RedactURL(u)).Int("retention_days", days).Msg("recording metrics in ClickHouse")
		return nil
	}
	rec, err := pganalytics.New(m.DB.Pool, opts)
	if err != nil {
		return err
	}
	m.Recorder, m.Reports, m.RecorderStats = rec, rec, rec.Stats
	m.onClose("metrics recorder", func(context.Context) error { return rec.Close() })
	// NOTE: only processes that run the pipeline delete old rows, so an
	// api process beside them does not repeat the work.
	if m.Role != "api" {
		stop := pganalytics.StartRetention(m.DB.Pool, days, retentionEvery, m.Log)
		m.onClose("analytics retention", func(context.Context) error { stop(); return nil })
	}
	return nil
}

// startSamplers samples this process's resources (and its recorder's drop
// count) in every role, and the consumer lag per topic and partition in the
// processes that run consumers, every ANALYTICS_SAMPLE_SECONDS.
func (m *App) startSamplers() {
	// NOTE: the setting, not the recorder's type: the recorder is wrapped
	// beside the Prometheus series (startPrometheus).
	if !docflow.AnalyticsEnabled.Get(m.Settings) {
		return
	}
	sources := []analytics.Source{analytics.ProcessSource(m.Role, m.RecorderStats)}
	if (m.Role == "serve" || m.Role == "worker") && len(m.Brokers) > 0 {
		insp := pipeline.NewInspector(m.Brokers, m.Runs, docflow.StandardSteps)
		sources = append(sources, insp.PartitionLags)
	}
	s := &analytics.Sampler{Recorder: m.Recorder, Sources: sources, Log: m.Log,
		Every: docflow.AnalyticsSampleInterval.Get(m.Settings)}
	s.Start()
	m.onClose("analytics sampler", func(context.Context) error { s.Stop(); return nil })
}
