// Package e2e runs docflow's processing end to end in one process: a
// throwaway PostgreSQL database, the embedded Kafka-protocol broker, the
// outbox relay, the pipeline engine with the real processing steps, and
// intake. The end-to-end tests and docflow-bench's processing section
// build on Stack.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/pipeline"
	"docflow/actors/pipeline/steps"
	"docflow/intake"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
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

// Stack is one running docflow processing stack.
type Stack struct {
	DB       *postgres.DB
	Settings *postgres.SettingsService
	Blobs    *blob.Local
	Files    *postgres.FileService
	Runs     *postgres.RunStore
	Rules    *postgres.ClassificationService
	Intake   *intake.Service
	Steps    *steps.Steps
	Engine   *pipeline.Engine
	Embeds   *steps.EmbeddingRuns

	env     map[string]string
	envMu   sync.Mutex
	dir     string
	closers []func()
}

// Start builds and starts everything. Close releases it.
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	s = &Stack{env: map[string]string{}}
	for k, v := range o.Env {
		s.env[k] = v
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.dir, err = os.MkdirTemp("", "docflow-e2e-"); err != nil {
		return nil, err
	}
	dir := s.dir
	s.closers = append(s.closers, func() { os.RemoveAll(dir) })

	db, cleanup, err := postgres.OpenTestDB(ctx, "e2e")
	if err != nil {
		return nil, fmt.Errorf("open test db: %w", err)
	}
	s.DB = db
	s.closers = append(s.closers, cleanup)
	cipher, err := postgres.NewCipher(strings.Repeat("e", 40))
	if err != nil {
		return nil, err
	}
	if s.Settings, err = postgres.NewSettingsService(ctx, db, cipher, s.getenv, o.Log); err != nil {
		return nil, err
	}
	if s.Blobs, err = blob.Open(filepath.Join(dir, "blobs"), blob.Options{NoSync: o.NoSyncBlobs}); err != nil {
		return nil, err
	}
	s.Files = postgres.NewFileService(db)
	s.Runs = postgres.NewRunStore(db)
	s.Rules = postgres.NewClassificationService(db)
	s.Embeds = steps.NewEmbeddingRuns(postgres.NewEmbeddingStore(db))
	if s.Intake, err = intake.New(intake.Config{Files: s.Files, Blobs: s.Blobs, Settings: s.Settings, Log: o.Log,
		WorkDir: dir, LoadPerCPU: func() float64 { return 0 }}); err != nil {
		return nil, err
	}
	if s.Steps, err = steps.New(steps.Deps{Settings: s.Settings, Rules: s.Rules, Log: o.Log, TempDir: filepath.Join(dir, "tmp"), WorkDir: dir}); err != nil {
		return nil, err
	}
	st := s.Steps
	s.closers = append(s.closers, func() { st.Close() })

	broker := streams.NewBroker(streams.BrokerConfig{MinSessionTimeout: 500 * time.Millisecond, Log: o.Log})
	if err := broker.Start(); err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}
	s.closers = append(s.closers, broker.Close)
	prod, err := streams.NewProducer(streams.ProducerConfig{Brokers: broker.Addrs()})
	if err != nil {
		return nil, err
	}
	relay, err := streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(db), Publisher: prod, Log: o.Log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		prod.Close()
		return nil, err
	}
	var engine *actor.Engine
	if engine, err = actors.NewEngine(o.Log); err != nil {
		return nil, err
	}
	reg := pipeline.NewRegistry(append(st.All(),
		pipeline.CheckDuplicates(s.Runs, func() bool { return docflow.SettingBool(s.Settings, "ENABLE_DEDUPLICATION", true) }),
		pipeline.SendToDestinations(pipeline.LocalDestinations(func() string { return s.Settings.Get("LOCAL_DESTINATION_DIR") })),
	)...)
	delays := o.RetryDelays
	if delays == nil {
		delays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
	}
	timeout := o.StepTimeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	s.Engine, err = pipeline.NewEngine(pipeline.Config{
		Store: postgres.NewRunStore(db).WithDirectOutbox(pipeline.DefaultDirectGrace), Pipelines: postgres.NewPipelineService(db),
		Rules: postgres.NewRoutingService(db), Brokers: broker.Addrs(), Publisher: prod, Actors: engine, Registry: reg,
		Settings: s.Settings, Blobs: s.Blobs, Log: o.Log,
		RetryDelays: delays, StepTimeout: timeout, PoolSizes: o.PoolSizes, Partitions: 4,
		LeaseTTL: 10 * time.Second, Heartbeat: 500 * time.Millisecond,
		Consumer: func(c *streams.ConsumerConfig) {
			if o.ProductionTimings {
				return
			}
			c.HeartbeatInterval = 100 * time.Millisecond
			c.SessionTimeout = 2 * time.Second
			c.RebalanceTimeout = 4 * time.Second
			c.DrainTimeout = time.Second
			c.CommitInterval = 20 * time.Millisecond
			c.MaxWait = 50 * time.Millisecond
		},
	})
	if err != nil {
		relay.Close()
		prod.Close()
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := s.Engine.Start(sctx); err != nil {
		relay.Close()
		prod.Close()
		return nil, fmt.Errorf("start engine: %w", err)
	}
	relay.Start()
	eng := s.Engine
	s.closers = append(s.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Stop(ctx) //nolint:errcheck
		relay.Close()
		prod.Close()
	})
	return s, nil
}

func (s *Stack) getenv(k string) string {
	s.envMu.Lock()
	defer s.envMu.Unlock()
	return s.env[k]
}

// SetEnv changes an environment setting; steps read it on their next run.
func (s *Stack) SetEnv(k, v string) {
	s.envMu.Lock()
	defer s.envMu.Unlock()
	s.env[k] = v
}

// Dir is the stack's scratch directory.
func (s *Stack) Dir() string { return s.dir }

// Close stops the engine and removes everything, newest first.
func (s *Stack) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
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
		rows, err := s.DB.Pool.Query(ctx, `SELECT id, status FROM files WHERE id = ANY($1)`, ids)
		if err == nil {
			for rows.Next() {
				var id int64
				var st string
				if rows.Scan(&id, &st) == nil && (st == docflow.StatusCompleted || st == docflow.StatusFailed || st == docflow.StatusDuplicate) {
					out[id] = st
				}
			}
			rows.Close()
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
