package app

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/storage/blob"
	"docflow/storage/postgres"
)

// startBlobSweep sweeps the blob store every BLOB_SWEEP_INTERVAL, removing
// the blobs no record references: the pipeline's intermediate PDFs,
// processed versions and sidecars replaced by a new run, uploads whose
// intake failed. The loop stops on Close, before the blob store and the
// database close.
func (m *App) startBlobSweep(ctx context.Context) {
	interval := docflow.BlobSweepInterval.Get(m.Settings)
	if interval <= 0 {
		m.Log.Info().Msg("blob sweep disabled (BLOB_SWEEP_INTERVAL is 0)")
		return
	}
	delay := m.sweepDelay
	if delay <= 0 {
		delay = min(blobSweepDelay, interval)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	log := m.Log.With().Str("component", "blob-sweep").Logger()
	go func() {
		defer close(done)
		t := time.NewTimer(delay)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			SweepBlobs(ctx, m.Blobs, m.Files, m.Settings, log) //nolint:errcheck // logged
			t.Reset(interval)
		}
	}()
	m.onClose("blob sweep", func(cctx context.Context) error {
		cancel()
		select {
		case <-done:
		case <-cctx.Done():
		}
		return nil
	})
}

// SweepBlobs runs one sweep of blobs under the sweep lock, so one process
// sweeps at a time, and logs its counts. ran is false when another process
// holds the lock: the round is skipped.
func SweepBlobs(ctx context.Context, blobs *blob.Local, files *postgres.FileStore, settings docflow.SettingsStore, log zerolog.Logger) (st blob.SweepStats, ran bool, err error) {
	unlock, ok, err := files.TryLockBlobSweep(ctx)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn().Err(err).Msg("blob sweep skipped")
		}
		return st, false, err
	}
	if !ok {
		log.Debug().Msg("blob sweep skipped: another process is sweeping")
		return st, false, nil
	}
	defer unlock()
	minAge := blobSweepMinAge(settings, log)
	start := time.Now()
	st, err = blobs.Sweep(ctx, blob.SweepOptions{MinAge: minAge, InUse: files.BlobsInUse,
		OnError: func(key string, err error) {
			log.Warn().Err(err).Str("blob", key).Msg("blob sweep could not remove a blob")
		}})
	ev, msg := log.Info(), "blob sweep"
	switch {
	case err != nil && ctx.Err() != nil:
		msg = "blob sweep stopped"
	case err != nil:
		ev, msg = log.Warn().Err(err), "blob sweep failed"
	}
	ev.Int("examined", st.Examined).Int("old", st.Old).Int("removed", st.Removed).Int64("bytes_freed", st.Bytes).
		Int("failed", st.Failed).Str("min_age", minAge.String()).Dur("took", time.Since(start)).Msg(msg)
	return st, true, err
}

// blobSweepMinAge is BLOB_SWEEP_MIN_AGE, raised to twice STEP_TIMEOUT: a
// step stores its output before the transaction that names it commits,
// and a blob that young may be about to be referenced.
func blobSweepMinAge(settings docflow.SettingsReader, log zerolog.Logger) time.Duration {
	age := docflow.BlobSweepMinAge.Get(settings)
	step := docflow.Positive(docflow.StepTimeout, settings) // as the pipeline engine reads it
	if floor := 2 * step; age < floor {
		log.Warn().Str("configured", age.String()).Str("used", floor.String()).
			Msg("BLOB_SWEEP_MIN_AGE is below twice STEP_TIMEOUT: using twice STEP_TIMEOUT")
		age = floor
	}
	return age
}
