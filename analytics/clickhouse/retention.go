package clickhouse

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/rs/zerolog"

	"docflow/analytics"
)

// DataTables maps each table holding metric rows, raw and rolled up, to its
// time column. All are partitioned by toYYYYMMDD of that column but pct(2)
// and the *_coarse tables, by toYYYYMM (small: a day's partition would be
// a few hundred rows, and every query would read a granule of each), which
// keeps up to a month more on servers without TTL.
var DataTables = map[string]string{
	"events":          "ts",
	"steps_1m":        "minute",
	"documents_1m":    "minute",
	"intake_1m":       "minute",
	"requests_1m":     "minute",
	"integrations_1m": "minute",
	"lag_1m":          "minute",
	"process_1m":      "minute",
	"steps_1h":        "minute",
	"documents_1h":    "minute",
	"intake_1h":       "minute",
	"requests_1h":     "minute",
	"integrations_1h": "minute",
	"lag_1h":          "minute",
	"process_1h":      "minute",
	"pct":             "minute", // 0004, no longer fed since 0006
	"pct2":            "minute", // 0006: pct in granules of 8 rows
	// 0005: six-hour and day counts.
	"steps_coarse":        "minute",
	"documents_coarse":    "minute",
	"intake_coarse":       "minute",
	"requests_coarse":     "minute",
	"integrations_coarse": "minute",
	"lag_coarse":          "minute",
	"process_coarse":      "minute",
}

// DropPartitionsBefore drops, from every data table, the day partitions
// wholly before cutoff's day (UTC), and returns how many it dropped. This is
// retention on servers without TTL (18.16), and a cheap complement to TTL
// on the others.
func DropPartitionsBefore(ctx context.Context, conn driver.Conn, database string, cutoff time.Time) (int, error) {
	if !validName(database) {
		return 0, fmt.Errorf("clickhouse retention: invalid database name %q", database)
	}
	rows, err := conn.Query(ctx, `SELECT DISTINCT table, partition FROM system.parts
WHERE database = ? AND active`, database)
	if err != nil {
		return 0, fmt.Errorf("list clickhouse partitions: %w", err)
	}
	type part struct{ table, partition string }
	var old []part
	limit, _ := strconv.Atoi(cutoff.UTC().Format("20060102"))
	for rows.Next() {
		var p part
		if err := rows.Scan(&p.table, &p.partition); err != nil {
			rows.Close()
			return 0, fmt.Errorf("list clickhouse partitions: %w", err)
		}
		if _, ok := DataTables[p.table]; !ok {
			continue
		}
		day, err := strconv.Atoi(strings.Trim(p.partition, "'"))
		if day < 1_000_000 {
			// A month (YYYYMM: pct(2), *_coarse): dropped once wholly before the cutoff.
			day = day*100 + 31
		}
		if err != nil || day >= limit {
			continue
		}
		old = append(old, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("list clickhouse partitions: %w", err)
	}
	sort.Slice(old, func(i, j int) bool { return old[i].table+old[i].partition < old[j].table+old[j].partition })
	dropped := 0
	for _, p := range old {
		part, _ := strconv.Atoi(strings.Trim(p.partition, "'"))
		if err := conn.Exec(ctx, "ALTER TABLE "+database+"."+p.table+" DROP PARTITION "+strconv.Itoa(part)); err != nil {
			return dropped, fmt.Errorf("drop clickhouse partition %s.%d: %w", p.table, part, err)
		}
		dropped++
	}
	return dropped, nil
}

// SupportsTTL reports whether the server has table TTL (ClickHouse 19.6
// and later).
func SupportsTTL(ctx context.Context, conn driver.Conn) (bool, error) {
	v, err := conn.ServerVersion()
	if err != nil {
		return false, fmt.Errorf("clickhouse server version: %w", err)
	}
	return v.Version.Major > 19 || (v.Version.Major == 19 && v.Version.Minor >= 6), nil
}

// ApplyTTL sets each data table's TTL to days when the server has TTL, and
// reports whether it did. Old parts then go in the server's merges; the
// partition drop stays as the bound that holds in any case.
func ApplyTTL(ctx context.Context, conn driver.Conn, database string, days int) (bool, error) {
	if days <= 0 || !validName(database) {
		return false, fmt.Errorf("clickhouse ttl: bad arguments (%q, %d days)", database, days)
	}
	ok, err := SupportsTTL(ctx, conn)
	if err != nil || !ok {
		return false, err
	}
	for _, stmt := range TTLStatements(database, days) {
		if err := conn.Exec(ctx, stmt); err != nil {
			return false, fmt.Errorf("set clickhouse ttl: %w", err)
		}
	}
	return true, nil
}

// TTLStatements are the statements ApplyTTL runs, one per data table.
func TTLStatements(database string, days int) []string {
	names := make([]string, 0, len(DataTables))
	for t := range DataTables {
		names = append(names, t)
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, t := range names {
		out = append(out, fmt.Sprintf("ALTER TABLE %s.%s MODIFY TTL %s + toIntervalDay(%d)", database, t, DataTables[t], days))
	}
	return out
}

// DefaultRetentionEvery is how often old partitions are dropped.
const DefaultRetentionEvery = time.Hour

// retainer drops old partitions from a background goroutine.
type retainer struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startRetention(conn driver.Conn, database string, cfg Config, opts analytics.Options) *retainer {
	every := cfg.RetentionEvery
	if every <= 0 {
		every = DefaultRetentionEvery
	}
	log := zerolog.Nop()
	if opts.Logger != nil {
		log = *opts.Logger
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &retainer{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			cutoff := time.Now().UTC().AddDate(0, 0, -cfg.RetentionDays)
			runCtx, stop := context.WithTimeout(ctx, 5*time.Minute)
			n, err := DropPartitionsBefore(runCtx, conn, database, cutoff)
			stop()
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn().Err(err).Msg("analytics retention failed; retrying later")
			case n > 0:
				log.Info().Int("partitions", n).Time("before", cutoff).Msg("analytics retention dropped old days")
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return r
}

func (r *retainer) stop() {
	r.cancel()
	<-r.done
}
