// Package e2e runs docflow's processing end to end in one process: a
// worker built by internal/app's test twin (a throwaway PostgreSQL
// database, the embedded Kafka-protocol broker, the outbox relay, the
// pipeline engine with the real processing steps, and intake). The
// end-to-end tests and docflow-bench's processing section build on Stack.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/actors/pipeline/steps"
	"docflow/internal/app/apptest"
	"docflow/storage/blob"
	"docflow/storage/postgres"
)

// Options shape a Stack.
type Options struct {
	// Env are environment settings (the settings service reads them
	// below database values and above the defaults).
	Env map[string]string
	// RetryDelays of failed steps (default 50 ms, 100 ms: quick tests).
	RetryDelays []time.Duration
	// StepTimeout per attempt (default 3 min).
	StepTimeout time.Duration
	// PoolSizes of the step actors (default: the engine's).
	PoolSizes map[string]int
	Log       zerolog.Logger
	// NoSyncBlobs skips fsync in the blob store (benchmarks).
	NoSyncBlobs bool
	// ProductionTimings keeps the consumers' production polling and
	// heartbeat intervals (benchmarks) instead of the quick test ones.
	ProductionTimings bool
}

// Stack is one running docflow worker: the pipeline engine, the relay and
// intake, on the test twin's database and broker.
type Stack struct {
	*apptest.App
	Rules  *postgres.ClassificationStore
	Embeds *steps.EmbeddingRuns
}

// Start builds and starts everything. Close releases it.
func Start(ctx context.Context, o Options) (*Stack, error) {
	log := o.Log
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", Env: o.Env, Log: &log, ProductionTimings: o.ProductionTimings,
		Engine: func(c *pipeline.Config) {
			if o.RetryDelays != nil {
				c.RetryDelays = o.RetryDelays
			}
			if o.StepTimeout != 0 {
				c.StepTimeout = o.StepTimeout
			}
			c.PoolSizes = o.PoolSizes
		},
		Blobs: func(b *blob.Options) { b.NoSync = o.NoSyncBlobs },
	})
	if err != nil {
		return nil, err
	}
	return &Stack{App: a, Rules: postgres.NewClassificationStore(a.DB), Embeds: a.Embeddings}, nil
}

// Ingest uploads a file through intake (the path of every upload channel)
// and returns its id and run id.
func (s *Stack) Ingest(ctx context.Context, path string, owner *docflow.User) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	res, err := s.Intake.Ingest(ctx, docflow.Upload{Filename: filepath.Base(path), Body: f, Size: st.Size(),
		User: owner, Channel: docflow.ChannelUpload})
	if err != nil {
		return 0, "", fmt.Errorf("ingest %s: %w", filepath.Base(path), err)
	}
	return res.File.ID, res.TaskID, nil
}

// WaitTerminal waits until every file is completed, failed or duplicate
// and returns the statuses.
func (s *Stack) WaitTerminal(ctx context.Context, ids ...int64) (map[int64]string, error) {
	for {
		out := map[int64]string{}
		files, err := s.Files.FindFilesByIDs(ctx, ids)
		if err == nil {
			for _, f := range files {
				if st := f.Status; st == docflow.StatusCompleted || st == docflow.StatusFailed || st == docflow.StatusDuplicate {
					out[f.ID] = st
				}
			}
		}
		if len(out) == len(ids) {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, errors.Join(ctx.Err(), fmt.Errorf("%d of %d files finished", len(out), len(ids)))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Logs returns a file's processing log, oldest first.
func (s *Stack) Logs(ctx context.Context, fileID int64) ([]*docflow.ProcessingLog, error) {
	return s.Files.FindProcessingLogs(ctx, fileID)
}
