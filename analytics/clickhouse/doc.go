// Package clickhouse records metrics in ClickHouse over the native protocol
// and answers the dashboard queries from it.
//
// The SQL here runs on ClickHouse 18.16 (the smoke target available to tests)
// as well as on current releases (chdbcheck runs it on one): DateTime rather
// than DateTime64, a table TTL only where the server has it, and INSERTs
// that name their columns.
//
// Recording: each batch is one INSERT naming only the columns its rows set,
// run under the batch token as its query id, so a retry first asks
// system.query_log whether the earlier attempt landed. Raw events are kept
// in day partitions; materialized views feed per-minute, per-hour and
// six-hour/day rollups (AggregatingMergeTree), and pct2, the durations'
// log-bucket histograms at 5 min, 30 min, 1 h, 6 h and 1 d.
//
// Reports read each part of their window from the coarsest tier whose grain
// divides the buckets, the edges from the per-minute rollups or raw rows;
// percentiles over whole hours (or whole five minutes beyond six hours) are
// pct2's states read as bytes and merged in the API process. What a report
// read of closed buckets is kept, so a dashboard's moving window reads only
// its new edges. A report's queries run at once, each on one reading thread.
//
// Its files:
//   - clickhouse.go: the store, its recorder and options.
//   - migrate.go: the versioned migrations (migrations/*.sql,
//     schema_migrations).
//   - tiers.go: which tier answers each part of a window; the percentile
//     queries.
//   - hist.go: pct2's histograms read, merged and kept.
//   - buckets.go: the counting queries' closed buckets kept alike.
//   - reports.go: the docflow.Analytics reports.
//   - retention.go: dropping old day (and month) partitions.
package clickhouse
