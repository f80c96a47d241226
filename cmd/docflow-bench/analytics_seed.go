package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"docflow"
)

// seedChunk is how many rows one server-side INSERT … SELECT writes: a
// statement's rows are in time order, so each covers a few day partitions.
const seedChunk = 10_000_000

// seedOnServer writes n metrics over [from, to) and the lag and process
// samples of every minute by INSERT … SELECT from numbers() on the server
// (BENCH_ANALYTICS_SEED=server): the materialized views fill the rollups
// as they do for recorded rows, without the client building and sending
// every row (100 M rows would take the client-side seeding an hour). The
// mix is metricMix's, drawn from hashes of the row number; the times are
// spread evenly rather than at random, in order.
func seedOnServer(ctx context.Context, conn driver.Conn, db string, n int, from, to time.Time) (int, error) {
	lit := func(ss []string) string {
		q := make([]string, len(ss))
		for i, s := range ss {
			q[i] = "'" + s + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	str := func(s string) string { return "'" + s + "'" }
	steps := lit(docflow.StandardSteps)
	classes := lit([]string{"timeout", "tool_missing", "corrupt_input", "upstream_5xx", "panic"})
	routes := lit([]string{"/api/files", "/api/files/{id}", "/api/upload", "/api/search", "/api/queue/stats", "/api/files/{id}/download"})
	channels := lit([]string{"upload", "email", "watch_folder", "url"})
	lo, span := strconv.FormatInt(from.Unix(), 10), strconv.FormatInt(int64(to.Sub(from)/time.Second), 10)
	total := strconv.Itoa(n)
	// r(k) is the k-th random number of a row; p its kind draw (0..99).
	r := func(k int) string { return "cityHash64(number, " + strconv.Itoa(k) + ")" }
	kind := "multiIf(p < 50, " + str(docflow.MetricStep) + ", p < 80, " + str(docflow.MetricRequest) + ", p < 90, " + str(docflow.MetricIntake) +
		", p < 98, " + str(docflow.MetricDocument) + ", " + str(docflow.MetricIntegration) + ")"
	isStep, failed := "p < 50", "p < 50 AND "+r(5)+" % 50 = 0"
	cols := []string{
		"kind", kind,
		"ts", "toDateTime(" + lo + " + intDiv(number * " + span + ", " + total + "))",
		"file_id", "toInt64(" + r(11) + " % 1000000 + 1)",
		"step_type", "if(" + isStep + ", " + steps + "[" + r(4) + " % 8 + 1], '')",
		"status", "multiIf(" + failed + ", " + str(docflow.StepFailed) + ", " + isStep + ", " + str(docflow.StepSucceeded) + ", p < 80, '', p < 90, " +
			str(docflow.IntakeAccepted) + ", p < 98, " + str(docflow.StepSucceeded) + ", " + str(docflow.OutcomeOK) + ")",
		"attempt", "toInt32(" + isStep + ")",
		"duration_ms", "if(p >= 90 AND p < 98, 20, 1) * dur",
		"bytes", "toInt64(multiIf(" + isStep + ", 150000, p < 80, 0, p < 90, 200000, p < 98, 0, 100000))",
		"error_class", "if(" + failed + ", " + classes + "[" + r(6) + " % 5 + 1], '')",
		"channel", "if(p >= 80 AND p < 90, " + channels + "[" + r(10) + " % 4 + 1], '')",
		"method", "if(p >= 50 AND p < 80, 'GET', '')",
		"route", "if(p >= 50 AND p < 80, " + routes + "[" + r(8) + " % 6 + 1], '')",
		"http_status", "toInt32(if(p >= 50 AND p < 80, if(" + r(9) + " % 100 = 0, 503, 200), 0))",
		"pipeline", "if(" + isStep + ", '1', '')",
		"worker", "if(" + isStep + ", concat('worker-', toString(" + r(7) + " % 4)), '')",
		"queue_wait_ms", "if(" + isStep + ", dur / 3, 0)",
		"bytes_in", "toInt64(if(" + isStep + ", 200000, 0))",
		"type", "multiIf(p >= 80 AND p < 90, 'application/pdf', p >= 98, 's3', '')",
		"direction", "if(p >= 98, 'out', '')",
	}
	var names, exprs []string
	for i := 0; i < len(cols); i += 2 {
		names, exprs = append(names, cols[i]), append(exprs, cols[i+1]+" AS "+cols[i])
	}
	for off := 0; off < n; off += seedChunk {
		// An exponential duration of mean 200 ms, as metricMix's.
		q := "INSERT INTO " + db + ".events (" + strings.Join(names, ", ") + ") SELECT " + strings.Join(exprs, ", ") +
			" FROM (SELECT number, " + r(3) + " % 100 AS p, -200 * log((" + r(2) + " % 1000000 + 0.5) / 1000000) AS dur FROM numbers(" +
			strconv.Itoa(off) + ", " + strconv.Itoa(min(seedChunk, n-off)) + "))"
		if err := conn.Exec(ctx, q); err != nil {
			return 0, fmt.Errorf("seed rows %d..: %w", off, err)
		}
	}
	// The samples, one a minute: 13 topics' lag and 3 processes.
	minutes := int(to.Sub(from) / time.Minute)
	q := "INSERT INTO " + db + ".events (kind, ts, topic, lag, process, worker, cpu, rss, goroutines) SELECT " +
		"if(k < 13, " + str(docflow.MetricLag) + ", " + str(docflow.MetricProcess) + ") AS kind, toDateTime(" + lo + " + 60 * intDiv(number, 16)) AS ts, " +
		"if(k < 13, concat('steps.', toString(k)), '') AS topic, toInt64(if(k < 13, k, 0)) AS lag, " +
		"if(k < 13, '', concat('host:', toString(k - 13))) AS process, if(k < 13, '', 'worker') AS worker, " +
		"toFloat64(if(k < 13, 0, 50)) AS cpu, toInt64(if(k < 13, 0, 268435456)) AS rss, toInt64(if(k < 13, 0, 100)) AS goroutines " +
		"FROM (SELECT number, number % 16 AS k FROM numbers(" + strconv.Itoa(16*minutes) + "))"
	if err := conn.Exec(ctx, q); err != nil {
		return 0, fmt.Errorf("seed samples: %w", err)
	}
	return 16 * minutes, nil
}
