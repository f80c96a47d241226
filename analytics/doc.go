// Package analytics batches metric rows off the hot path and hands them to a
// store (analytics/postgres, analytics/clickhouse) in batches.
//
// The core is Batcher: Add never blocks for I/O; a background loop writes a
// batch when BatchSize rows are buffered or FlushInterval has passed, and
// keeps taking rows while writes (up to Writers at once) run; a failed
// write is retried with exponential backoff while rows stay buffered up to
// MaxBuffered, after which the queue fills and new rows are dropped and
// counted.
//
// Its files:
//   - batcher.go, batcher_loop.go, options.go: Batcher, its loop and its
//     options; a batch buffer is sized for what the flow last gave.
//   - batch_token.go: the token a batch is written under, so a store can
//     tell a retried batch that had landed.
//   - recorder.go: Recorder, the docflow.Recorder over a Store.
//   - columns.go, columnar.go: the one column list of docflow.Metric, and a
//     batch as whole columns in reused buffers (with the columns its rows
//     set).
//   - sampler.go: Sampler, consumer lag and process resources every few
//     seconds.
//   - reports.go: the helpers both stores use to build docflow.Analytics
//     reports (rates, top errors, grouping).
//   - multi.go: Multi, several recorders as one (the store and the
//     Prometheus series).
//   - memory.go: Memory, the recorder of tests.
package analytics
