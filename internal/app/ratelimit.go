package app

import (
	"context"
	"time"

	"docflow/internal/ratelimit"
	"docflow/storage/postgres"
)

// rateWindowSweep is how often a serve or api process deletes the rate
// limit windows that no longer count.
const rateWindowSweep = time.Minute

// startRateLimits builds the rate limits every process shares through
// PostgreSQL (internal/ratelimit): the API's rate limits and the per-user
// upload window hold across all api processes, not per process. serve and
// api also sweep the expired windows every rateWindowSweep (each process
// does; the DELETE is cheap and idempotent); the loop stops on Close.
func (m *App) startRateLimits(ctx context.Context) {
	store := postgres.NewRateLimitStore(m.DB)
	m.limits = ratelimit.New(store, m.Log.With().Str("component", "ratelimit").Logger())
	if m.Role != "serve" && m.Role != "api" {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(rateWindowSweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, err := store.SweepRateWindows(ctx); err != nil && ctx.Err() == nil {
				m.Log.Warn().Err(err).Msg("expired rate limit windows not swept")
			}
		}
	}()
	m.onClose("rate limits", func(cctx context.Context) error {
		cancel()
		select {
		case <-done:
		case <-cctx.Done():
		}
		return nil
	})
}
