package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/pipeline/steps"
	"docflow/actors/pipeline/steps/teststep"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// testLog is quiet unless PIPELINE_TEST_LOG is set.
func testLog(t testing.TB) zerolog.Logger {
	if os.Getenv("PIPELINE_TEST_LOG") != "" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.ErrorLevel)
}

// env is one engine on an embedded broker and a throwaway database, with an
// outbox relay: the whole flow of ARCHITECTURE.md in one process.
type env struct {
	t       testing.TB
	ctx     context.Context
	DB      *postgres.DB
	Broker  *streams.Broker
	Brokers []string
	Prod    *streams.Producer
	Relay   *streams.Relay
	Actors  *actor.Engine
	Engine  *Engine
	Blobs   *blob.Local
	Store   *postgres.RunStore
	Pipes   *postgres.PipelineStore
	Metrics *captureRecorder
	log     zerolog.Logger
	port    int
	cfg     func(*Config)
	// msgPipeline, when set, is the pipeline the next file.ingested names
	// (a file assigned to a pipeline deleted since).
	msgPipeline *int64
	// destDir is LOCAL_DESTINATION_DIR.
	destMu  sync.Mutex
	destDir string
}

func (e *env) setDestDir(d string) { e.destMu.Lock(); e.destDir = d; e.destMu.Unlock() }
func (e *env) getDestDir() string  { e.destMu.Lock(); defer e.destMu.Unlock(); return e.destDir }

type captureRecorder struct {
	mu sync.Mutex
	ms []docflow.Metric
}

func (c *captureRecorder) Record(m docflow.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ms = append(c.ms, m)
}
func (c *captureRecorder) Flush(context.Context) error { return nil }
func (c *captureRecorder) Ping(context.Context) error  { return nil }
func (c *captureRecorder) Close() error                { return nil }
func (c *captureRecorder) all() []docflow.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]docflow.Metric(nil), c.ms...)
}

// newEnv starts everything; cfg adjusts the engine's configuration.
func newEnv(t testing.TB, cfg func(*Config)) *env {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "pipeline")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	e := &env{t: t, ctx: ctx, DB: db, log: testLog(t), cfg: cfg, Metrics: &captureRecorder{}}
	e.Store = postgres.NewRunStore(db)
	e.Pipes = postgres.NewPipelineStore(db)
	e.Blobs, err = blob.Open(t.TempDir(), blob.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.startBroker()
	// hollywood logs through slog's process-wide default, which
	// actors.NewEngine points at the logger it is given: tests running in
	// parallel would write into each other's logs, even into those of
	// tests that ended. Its own logs are dropped unless PIPELINE_TEST_LOG
	// asks for them (then run one test at a time).
	hlog := zerolog.Nop()
	if os.Getenv("PIPELINE_TEST_LOG") != "" {
		hlog = e.log
	}
	e.Actors, err = actors.NewEngine(hlog)
	if err != nil {
		t.Fatal(err)
	}
	e.startEngine()
	return e
}

func (e *env) startBroker() {
	e.t.Helper()
	e.Broker = streamstest.NewBroker(e.t, streams.BrokerConfig{Port: e.port})
	e.Brokers = e.Broker.Addrs()
	if e.port == 0 {
		var p int
		fmt.Sscanf(e.Brokers[0][strings.LastIndexByte(e.Brokers[0], ':')+1:], "%d", &p)
		e.port = p
	}
}

// startEngine starts a producer, a relay and an engine.
func (e *env) startEngine() {
	e.t.Helper()
	var err error
	e.Prod, err = streams.NewProducer(streams.ProducerConfig{Brokers: e.Brokers})
	if err != nil {
		e.t.Fatal(err)
	}
	e.Relay, err = streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(e.DB), Publisher: e.Prod, Log: e.log, PollInterval: 200 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := Config{
		Store: postgres.NewRunStore(e.DB).WithDirectOutbox(DefaultDirectGrace), Pipelines: e.Pipes, Rules: postgres.NewRoutingStore(e.DB),
		Brokers: e.Brokers, Publisher: e.Prod, Actors: e.Actors,
		Registry: NewRegistry(teststep.New(), steps.CheckDuplicates(e.Store, nil),
			steps.SendToDestinations(steps.LocalDestinations(e.getDestDir))),
		Recorder: e.Metrics, Blobs: e.Blobs, Log: e.log,
		RetryDelays: []time.Duration{30 * time.Millisecond, 60 * time.Millisecond},
		StepTimeout: 5 * time.Second, LeaseTTL: 2 * time.Second, Heartbeat: 200 * time.Millisecond,
		Partitions: 4, Consumer: streamstest.FastGroup,
	}
	if e.cfg != nil {
		e.cfg(&cfg)
	}
	e.Engine, err = NewEngine(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := e.Engine.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	e.Relay.Start()
	eng, relay, prod := e.Engine, e.Relay, e.Prod
	e.t.Cleanup(func() { stopAll(eng, relay, prod) })
}

func stopAll(eng *Engine, relay *streams.Relay, prod *streams.Producer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = eng.Stop(ctx)
	relay.Close()
	_ = prod.Close()
}

// stopEngine stops the engine, relay and producer (the broker stays).
func (e *env) stopEngine() { stopAll(e.Engine, e.Relay, e.Prod) }

// pipeline creates a pipeline of test steps, one per config.
func (e *env) pipeline(name string, configs ...map[string]any) *docflow.Pipeline {
	e.t.Helper()
	p := &docflow.Pipeline{Name: name, IsActive: true}
	for i, c := range configs {
		typ := docflow.StepTest
		if st, ok := c["type"].(string); ok {
			typ = st
			c = map[string]any{}
		}
		p.Steps = append(p.Steps, &docflow.PipelineStep{StepType: typ, Label: fmt.Sprintf("s%d", i), Enabled: true, Config: c})
	}
	if err := e.Pipes.CreatePipeline(e.ctx, p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// ingest records a file and its pending run and enqueues file.ingested, as
// intake does, and returns the file id and run id.
func (e *env) ingest(name string, content string, pipelineID *int64, owner *string) (int64, string) {
	e.t.Helper()
	info, err := e.Blobs.Put(e.ctx, strings.NewReader(content), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	hash := hex.EncodeToString(sum[:])
	runID := uuid.NewString()
	var fileID int64
	err = pgx.BeginFunc(e.ctx, e.DB.Pool, func(tx pgx.Tx) error {
		var dupOf *int64
		var orig int64
		if err := tx.QueryRow(e.ctx, `SELECT id FROM files WHERE filehash=$1 AND status <> 'duplicate' AND duplicate_of IS NULL`, hash).Scan(&orig); err == nil {
			dupOf = &orig
		}
		if err := tx.QueryRow(e.ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type,
			owner_id, pipeline_id, status, duplicate_of, original_blob, task_id)
			VALUES ($1, $2, $3, $4, 'application/pdf', $5, $6, 'pending', $7, $8, $9) RETURNING id`,
			hash, name, uuid.NewString()+".pdf", len(content), owner, pipelineID, dupOf, info.Key, runID).Scan(&fileID); err != nil {
			return err
		}
		if _, err := tx.Exec(e.ctx, `INSERT INTO runs (id, file_id, pipeline_id, status) VALUES ($1, $2, $3, 'pending')`,
			runID, fileID, pipelineID); err != nil {
			return err
		}
		msgPipeline := pipelineID
		if e.msgPipeline != nil {
			msgPipeline, e.msgPipeline = e.msgPipeline, nil
		}
		m, err := streams.FileIngestedMessage(streams.FileIngested{FileID: fileID, RunID: runID, OwnerID: owner, PipelineID: msgPipeline}, time.Now())
		if err != nil {
			return err
		}
		return postgres.Enqueue(e.ctx, tx, m)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return fileID, runID
}

func (e *env) fileStatus(id int64) string {
	e.t.Helper()
	var s string
	if err := e.DB.Pool.QueryRow(e.ctx, `SELECT status FROM files WHERE id=$1`, id).Scan(&s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// waitStatus waits until every file has a terminal status and returns them.
func (e *env) waitTerminal(d time.Duration, ids ...int64) map[int64]string {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for {
		out := map[int64]string{}
		rows, err := e.DB.Pool.Query(e.ctx, `SELECT id, status FROM files WHERE id = ANY($1)`, ids)
		if err == nil {
			for rows.Next() {
				var id int64
				var s string
				_ = rows.Scan(&id, &s)
				if s == docflow.StatusCompleted || s == docflow.StatusFailed || s == docflow.StatusDuplicate {
					out[id] = s
				}
			}
			rows.Close()
		}
		if len(out) == len(ids) {
			return out
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %v: %d of %d files finished: %v", d, len(out), len(ids), out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (e *env) logs(fileID int64) []*docflow.ProcessingLog {
	e.t.Helper()
	rows, err := e.DB.Pool.Query(e.ctx, `SELECT task_id, step_name, status, message FROM processing_logs WHERE file_id=$1 ORDER BY id`, fileID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []*docflow.ProcessingLog
	for rows.Next() {
		l := &docflow.ProcessingLog{}
		if err := rows.Scan(&l.TaskID, &l.StepName, &l.Status, &l.Message); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

func (e *env) run(runID string) *docflow.Run {
	e.t.Helper()
	r, err := e.Store.FindRun(e.ctx, runID)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// outbox returns the payloads and headers enqueued for topic.
func (e *env) outbox(topic string) []map[string]string {
	e.t.Helper()
	rows, err := e.DB.Pool.Query(e.ctx, `SELECT payload, headers FROM outbox WHERE topic=$1 ORDER BY id`, topic)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]string
	for rows.Next() {
		var p []byte
		h := map[string]string{}
		if err := rows.Scan(&p, &h); err != nil {
			e.t.Fatal(err)
		}
		h["payload"] = string(p)
		out = append(out, h)
	}
	return out
}

// completedExactlyOnce checks the recorded results of the runs: every step
// completed once, one completed log row per step.
func (e *env) completedExactlyOnce(runIDs ...string) {
	e.t.Helper()
	rows, err := e.DB.Pool.Query(e.ctx, `SELECT r.id, (SELECT count(*) FROM run_steps WHERE run_id=r.id),
		(SELECT count(*) FROM processing_logs WHERE task_id=r.id AND status IN ('completed', 'skipped'))
		FROM runs r WHERE r.id = ANY($1)`, runIDs)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var run string
		var steps, done int
		_ = rows.Scan(&run, &steps, &done)
		if steps != done {
			e.t.Errorf("run %s: %d steps, %d results recorded", run, steps, done)
		}
	}
	var bad int
	if err := e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM run_steps WHERE run_id = ANY($1) AND status <> 'completed'`, runIDs).Scan(&bad); err != nil {
		e.t.Fatal(err)
	}
	if bad > 0 {
		e.t.Errorf("%d steps not completed", bad)
	}
}

func ptr[T any](v T) *T { return &v }
