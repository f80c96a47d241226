package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/internal/app/apptest"
	"docflow/storage/postgres"
	"docflow/streams"
)

// pipelineBenchSteps is the length of the benchmark pipeline.
const pipelineBenchSteps = 8

// benchPipeline measures the pipeline engine on the embedded broker with a
// pipeline of 8 test steps that do nothing: document throughput beside the
// raw kafka-go baseline for the same number of messages, the latency of one
// document on an idle system, and 10 000 documents queued at once (peak
// memory, lag draining to zero).
func benchPipeline(ctx context.Context, r *Report) error {
	if os.Getenv("BENCH_PIPELINE") == "backlog" {
		return benchPipelineBacklogRows(ctx, r)
	}
	// Latency on an idle system.
	lat, err := benchPipelineLatency(ctx, 40)
	if err != nil {
		return err
	}
	r.AtMost("pipeline", fmt.Sprintf("p50 latency of one document through %d steps, idle", pipelineBenchSteps), lat.p50, "ms", 100)
	r.Add(Row{Section: "pipeline", Name: fmt.Sprintf("p95 latency of one document through %d steps, idle", pipelineBenchSteps),
		Value: lat.p95, Unit: "ms", Target: "info", Pass: true})

	// Throughput, then the same number of messages through raw kafka-go.
	const docs = 3000
	tp, err := benchPipelineThroughput(ctx, docs)
	if err != nil {
		return err
	}
	perSec := tp.perSec
	// Each document crosses the broker 1 + 8 times (file.ingested, then one
	// task per step): the baseline moves as many messages.
	msgs := docs * (1 + pipelineBenchSteps)
	base, err := benchKafkaBaseline(ctx, r, msgs)
	if err != nil {
		return err
	}
	baseDocs := base / float64(1+pipelineBenchSteps)
	r.Add(Row{Section: "pipeline", Name: fmt.Sprintf("throughput, %d docs x %d no-op steps (baseline: raw msgs/%d)", docs, pipelineBenchSteps, 1+pipelineBenchSteps),
		Value: perSec, Unit: "docs/s", Baseline: baseDocs, Target: ">= 300 docs/s", Pass: perSec >= 300})
	// NOTE: wall-clock throughput depends on what else the machine runs;
	// CPU time per document (this process, and the Postgres backends of the
	// bench database) does much less.
	r.Add(Row{Section: "pipeline", Name: "CPU per document, docflow process (user+sys)", Value: tp.procCPUms, Unit: "ms/doc", Target: "info", Pass: true})
	r.Add(Row{Section: "pipeline", Name: "CPU per document, Postgres backends (user+sys)", Value: tp.pgCPUms, Unit: "ms/doc", Target: "info", Pass: true})
	// How well the engine grouped its writes: a throughput that moves
	// with these moved with its batching, not with the machine.
	r.Add(Row{Section: "pipeline", Name: "step claims per shared transaction of the engine", Value: tp.claimsPerBatch, Unit: "claims", Target: "info", Pass: true})
	r.Add(Row{Section: "pipeline", Name: "step results per shared transaction of the engine", Value: tp.resultsPerBatch, Unit: "results", Target: "info", Pass: true})

	return benchPipelineBacklogRows(ctx, r)
}

// benchPipelineBacklogRows queues 10 000 documents at once.
func benchPipelineBacklogRows(ctx context.Context, r *Report) error {
	q, err := benchPipelineBacklog(ctx, 10000)
	if err != nil {
		return err
	}
	r.AtMost("pipeline", "peak RSS with 10000 documents queued at once", q.peakRSS, "MiB", 300)
	r.Add(Row{Section: "pipeline", Name: "consumer lag after the 10000-document backlog drained", Value: float64(q.finalLag), Unit: "msgs",
		Target: "0", Pass: q.finalLag == 0 && q.completed == 10000})
	r.Add(Row{Section: "pipeline", Name: "time to drain 10000 documents", Value: q.drain.Seconds(), Unit: "s", Target: "info", Pass: q.completed == 10000})
	return nil
}

// pipeBenchEnv is a docflow worker (internal/app's test twin: a throwaway
// database, the embedded broker, the relay and the engine) running only
// the test step.
type pipeBenchEnv struct {
	db       *postgres.DB
	recorder docflow.Recorder
	brokers  []string
	engine   *pipeline.Engine
	pipeline *docflow.Pipeline
	close    func()
}

func newPipeBenchEnv(ctx context.Context, env ...string) (*pipeBenchEnv, error) {
	log := zerolog.New(io.Discard)
	// The engine's production settings (12 partitions, leases, timeouts,
	// consumer timings) but for what the measurement needs.
	// The broker keeps its log on disk, as serve's does: the figures
	// are a worker's, which holds no log in memory.
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", Log: &log, ProductionTimings: true, BrokerOnDisk: true,
		Env: withEnv(map[string]string{"ENABLE_TEST_STEP": "true", "KAFKA_PARTITIONS": strconv.Itoa(streams.DefaultPartitions)}, env...),
		Engine: func(c *pipeline.Config) {
			c.StepTypes, c.SkipRecovery = []string{docflow.StepTest}, true
			c.RetryDelays, c.Heartbeat = []time.Duration{time.Second}, time.Second
			c.PoolSizes = map[string]int{docflow.StepTest: 64}
			c.StepTimeout, c.LeaseTTL, c.Partitions = 0, 0, 0
		},
		Relay: func(c *streams.RelayConfig) { c.PollInterval = 0 },
	})
	if err != nil {
		return nil, fmt.Errorf("bench worker: %w", err)
	}
	b := &pipeBenchEnv{db: a.DB, recorder: a.Recorder, brokers: a.Brokers, engine: a.Engine, close: a.Close}
	fail := func(err error) (*pipeBenchEnv, error) { b.close(); return nil, err }
	p := &docflow.Pipeline{Name: "bench", IsActive: true}
	for i := range pipelineBenchSteps {
		p.Steps = append(p.Steps, &docflow.PipelineStep{StepType: docflow.StepTest, Label: fmt.Sprintf("noop %d", i+1), Enabled: true})
	}
	if err := postgres.NewPipelineStore(b.db).CreatePipeline(ctx, p); err != nil {
		return fail(err)
	}
	b.pipeline = p
	// Let the consumer groups settle before measuring.
	if err := b.waitDone(ctx, b.ingestN(ctx, 20), 60*time.Second); err != nil {
		return fail(fmt.Errorf("warm-up: %w", err))
	}
	return b, nil
}

// withEnv adds the key, value pairs kv to env.
func withEnv(env map[string]string, kv ...string) map[string]string {
	for i := 0; i+1 < len(kv); i += 2 {
		env[kv[i]] = kv[i+1]
	}
	return env
}

// ingestN records n files and their runs and enqueues their file.ingested,
// as intake does, in transactions of up to 1000; it returns the run ids.
func (b *pipeBenchEnv) ingestN(ctx context.Context, n int) []string {
	runs := make([]string, 0, n)
	for lo := 0; lo < n; lo += 1000 {
		hi := min(lo+1000, n)
		ids := make([]string, hi-lo)
		hashes := make([]string, hi-lo)
		for i := range ids {
			ids[i] = uuid.NewString()
			hashes[i] = strings.ReplaceAll(uuid.NewString(), "-", "")
		}
		got, err := b.db.SeedRuns(ctx, b.pipeline.ID, ids, hashes, func(fileID int64, runID string) (docflow.OutboxMessage, error) {
			return streams.FileIngestedMessage(streams.FileIngested{FileID: fileID, RunID: runID, PipelineID: &b.pipeline.ID}, time.Now())
		})
		if err != nil {
			panic(fmt.Sprintf("bench ingest: %v", err))
		}
		runs = append(runs, got...)
	}
	return runs
}

// waitDone waits until every run has completed.
//
// NOTE: the poll itself runs on the measured database: it counts the
// database's unfinished runs (the bench database holds no others; a
// partial index has them), checks runs only once none is left, and with
// thousands of runs polls every 20 ms, so the waiting takes no CPU worth
// mentioning from the engine it measures (finish times come from the
// database's clock, not from the poll).
func (b *pipeBenchEnv) waitDone(ctx context.Context, runs []string, timeout time.Duration) error {
	files := postgres.NewFileStore(b.db)
	deadline := time.Now().Add(timeout)
	every := 2 * time.Millisecond
	if len(runs) > 100 {
		every = 20 * time.Millisecond
	}
	for {
		open, err := files.CountUnfinishedRuns(ctx)
		if err != nil {
			return err
		}
		if open == 0 {
			done, failed, err := b.db.RunOutcomes(ctx, runs)
			if err != nil {
				return err
			}
			if failed > 0 {
				return fmt.Errorf("%d runs failed", failed)
			}
			if done == len(runs) {
				return nil
			}
			return fmt.Errorf("%d of %d runs completed, none unfinished", done, len(runs))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runs unfinished after %s", open, len(runs), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

type pipeLatencies struct{ p50, p95 float64 }

func benchPipelineLatency(ctx context.Context, n int) (pipeLatencies, error) {
	b, err := newPipeBenchEnv(ctx)
	if err != nil {
		return pipeLatencies{}, err
	}
	defer b.close()
	var ms []float64
	for range n {
		runs := b.ingestN(ctx, 1)
		if err := b.waitDone(ctx, runs, 30*time.Second); err != nil {
			return pipeLatencies{}, err
		}
		// Both ends are the database's clock: the intake commit and the
		// commit that completed the run.
		d, err := b.db.RunLatencyMillis(ctx, runs[0])
		if err != nil {
			return pipeLatencies{}, err
		}
		ms = append(ms, d)
	}
	sort.Float64s(ms)
	return pipeLatencies{p50: ms[len(ms)/2], p95: ms[len(ms)*95/100]}, nil
}

type pipeThroughput struct {
	perSec float64
	// CPU milliseconds per document: this process, and the Postgres
	// backends serving the bench database.
	procCPUms, pgCPUms float64
	// How well the engine grouped its writes: the mean claims and step
	// results per shared transaction.
	claimsPerBatch, resultsPerBatch float64
}

// benchPipelineThroughput measures n documents through the bench pipeline;
// env are extra settings as key, value pairs.
func benchPipelineThroughput(ctx context.Context, n int, env ...string) (pipeThroughput, error) {
	b, err := newPipeBenchEnv(ctx, env...)
	if err != nil {
		return pipeThroughput{}, err
	}
	defer b.close()
	// Every run starts just after a checkpoint: none falls within it (the
	// next is checkpoint_timeout away), and each pays alike for the
	// full-page images that follow one.
	b.db.Checkpoint(ctx) //nolint:errcheck // needs a superuser or pg_checkpoint
	pg0 := b.backendCPU(ctx, nil)
	proc0 := processCPU()
	g0 := b.engine.GroupStats()
	start, err := b.db.ClockTimestamp(ctx)
	if err != nil {
		return pipeThroughput{}, err
	}
	runs := b.ingestN(ctx, n)
	if err := b.waitDone(ctx, runs, 10*time.Minute); err != nil {
		return pipeThroughput{}, err
	}
	// From before the intake to the commit that finished the last run, on
	// the database's clock.
	elapsed, err := b.db.RunsFinishedSince(ctx, runs, start)
	if err != nil {
		return pipeThroughput{}, err
	}
	g := b.engine.GroupStats()
	perBatch := func(n, batches int64) float64 { return float64(n) / float64(max(batches, 1)) }
	// The metrics still buffered are written now, so their CPU counts
	// (recording off: nothing to write).
	if err := b.recorder.Flush(ctx); err != nil {
		return pipeThroughput{}, fmt.Errorf("flush metrics: %w", err)
	}
	proc := processCPU() - proc0
	pg := b.backendCPU(ctx, pg0)
	var pgTotal time.Duration
	for _, d := range pg {
		pgTotal += d
	}
	return pipeThroughput{perSec: float64(n) / elapsed.Seconds(),
		procCPUms: proc.Seconds() * 1000 / float64(n), pgCPUms: pgTotal.Seconds() * 1000 / float64(n),
		claimsPerBatch:  perBatch(g.Claims-g0.Claims, g.ClaimBatches-g0.ClaimBatches),
		resultsPerBatch: perBatch(g.Results-g0.Results, g.ResultBatches-g0.ResultBatches)}, nil
}

// backendCPU returns the user+sys CPU time of each Postgres backend
// connected to the bench database (read from /proc), minus what since held
// for the same pid.
func (b *pipeBenchEnv) backendCPU(ctx context.Context, since map[int]time.Duration) map[int]time.Duration {
	out := map[int]time.Duration{}
	pids, err := b.db.BackendPIDs(ctx)
	if err != nil {
		return out
	}
	for _, pid := range pids {
		d, ok := pidCPU(int(pid))
		if !ok {
			continue
		}
		out[int(pid)] = d - since[int(pid)]
	}
	return out
}

type pipeBacklog struct {
	peakRSS   float64 // MiB
	finalLag  int64
	completed int
	drain     time.Duration
}

func benchPipelineBacklog(ctx context.Context, n int) (pipeBacklog, error) {
	b, err := newPipeBenchEnv(ctx)
	if err != nil {
		return pipeBacklog{}, err
	}
	defer b.close()
	var out pipeBacklog
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	// BENCH_PIPELINE_PROFILE=dir: the heap profile and the goroutines at
	// each new peak (4 MiB above the last written), and a line of the
	// runtime's memory figures.
	prof := os.Getenv("BENCH_PIPELINE_PROFILE")
	if rss, err := rssMiB(os.Getpid()); err == nil && prof != "" {
		fmt.Fprintf(os.Stderr, "backlog start: rss %.1f MiB, %s\n", rss, memLine())
	}
	go func() {
		defer wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		written := 0.0
		for {
			if rss, err := rssMiB(os.Getpid()); err == nil {
				mu.Lock()
				out.peakRSS = max(out.peakRSS, rss)
				mu.Unlock()
				if prof != "" && rss > written+4 {
					written = rss
					writePeakProfiles(prof + "/backlog-heap.pb")
					fmt.Fprintf(os.Stderr, "backlog peak: rss %.1f MiB, %s\n", rss, memLine())
				}
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	start := time.Now()
	runs := b.ingestN(ctx, n)
	werr := b.waitDone(ctx, runs, 15*time.Minute)
	out.drain = time.Since(start)
	close(stop)
	wg.Wait()
	out.completed, _ = b.db.CompletedRuns(ctx, runs)
	if werr != nil {
		return out, werr
	}
	in := pipeline.NewInspector(b.brokers, postgres.NewRunStore(b.db), []string{docflow.StepTest})
	// Offsets are committed every 100 ms: give the last commits a moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		lags, err := in.Lags(ctx)
		if err != nil {
			return out, err
		}
		out.finalLag = 0
		for _, l := range lags {
			out.finalLag += l
		}
		if out.finalLag == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out, nil
}

// memLine is the Go runtime's memory in MiB: the heap in use, idle and
// given back, the stacks, the runtime's own structures, and the
// goroutines.
func memLine() string {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("heap in use %.1f, idle %.1f, released %.1f; stacks %.1f; runtime %.1f MiB; %d goroutines",
		mib(m.HeapInuse), mib(m.HeapIdle), mib(m.HeapReleased), mib(m.StackInuse),
		mib(m.OtherSys+m.MSpanSys+m.MCacheSys+m.GCSys+m.BuckHashSys), runtime.NumGoroutine())
}

// writePeakProfiles writes the heap profile to path and the goroutines,
// grouped by stack, to path.goroutines.
func writePeakProfiles(path string) {
	for _, p := range []struct {
		name, path string
		debug      int
	}{{"heap", path, 0}, {"goroutine", path + ".goroutines", 1}} {
		f, err := os.Create(p.path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return
		}
		pprof.Lookup(p.name).WriteTo(f, p.debug) //nolint:errcheck
		f.Close()
	}
}
