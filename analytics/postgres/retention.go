package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
)

// deleteBatch bounds the rows one retention statement deletes, so a long
// backlog of old rows never holds one long transaction.
const deleteBatch = 10_000

// batchTokenAge is how long a written batch's token is kept: far longer
// than a batch is retried for.
const batchTokenAge = 24 * time.Hour

// DeleteBefore deletes metrics older than cutoff, in batches, and returns
// how many it deleted; and the tokens of batches written over a day ago.
func DeleteBefore(ctx context.Context, pool *pgxpool.Pool, cutoff time.Time) (int64, error) {
	if _, err := pool.Exec(ctx, `DELETE FROM metric_batches WHERE written_at < now() - $1::interval`, batchTokenAge.String()); err != nil {
		return 0, fmt.Errorf("delete old metric batch tokens: %w", err)
	}
	var total int64
	for {
		tag, err := pool.Exec(ctx, `DELETE FROM metrics WHERE ctid IN (SELECT ctid FROM metrics WHERE ts < $1 LIMIT $2)`, cutoff, deleteBatch)
		if err != nil {
			return total, fmt.Errorf("delete old metrics: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < deleteBatch {
			return total, nil
		}
	}
}

// StartRetention deletes metrics older than days every interval (first at
// once) until the returned stop is called.
func StartRetention(pool *pgxpool.Pool, days int, every time.Duration, log zerolog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			cutoff := time.Now().UTC().AddDate(0, 0, -days)
			rctx, rcancel := context.WithTimeout(ctx, 10*time.Minute)
			n, err := DeleteBefore(rctx, pool, cutoff)
			rcancel()
			switch {
			case err != nil && ctx.Err() == nil:
				log.Warn().Err(err).Msg("analytics retention failed; retrying later")
			case n > 0:
				log.Info().Int64("rows", n).Time("before", cutoff).Msg("analytics retention deleted old metrics")
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() { cancel(); <-done }
}
