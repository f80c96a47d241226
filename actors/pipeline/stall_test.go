package pipeline

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

// machineLatency is the slowest of a few short timer waits plus database
// round trips measured now: what a lease renewal costs on this machine
// under its present load.
func machineLatency(t *testing.T) time.Duration {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, postgres.TestServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var worst time.Duration
	for range 20 {
		start := time.Now()
		time.Sleep(5 * time.Millisecond)
		var one int
		if err := conn.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(start)-5*time.Millisecond)
	}
	return worst
}

// gate is a test step type that runs until the test releases it, so a
// test decides how long a step runs instead of guessing how long the
// machine needs.
type gate struct {
	mu      sync.Mutex
	started []string // run ids, in order
	release chan struct{}
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) step() docflow.Step {
	return docflow.StepFunc{Name: docflow.StepTest, Fn: func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
		g.mu.Lock()
		g.started = append(g.started, in.RunID)
		g.mu.Unlock()
		select {
		case <-g.release:
			return &docflow.StepResult{Message: "released"}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}}
}

// waitStarted waits until the step of run has started.
func (g *gate) waitStarted(t *testing.T, run string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		g.mu.Lock()
		ok := slices.Contains(g.started, run)
		g.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the step of run %s did not start within %s", run, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// leaseEnv is an engine whose test step is g, with a stall timeout of
// 300 ms checked by the test (FailStalled) rather than by a timer, and a
// lease TTL scaled to the machine: at least 900 ms, and 15 times its
// present latency.
func leaseEnv(t *testing.T, g *gate, adjust func(*Config)) (*env, time.Duration) {
	t.Helper()
	ttl := max(900*time.Millisecond, 15*machineLatency(t))
	t.Logf("lease TTL %s", ttl)
	e := newEnv(t, func(c *Config) {
		c.Registry = NewRegistry(g.step())
		c.StallTimeout = 300 * time.Millisecond
		c.StallInterval = time.Hour
		c.StepTimeout = time.Minute
		c.LeaseTTL = ttl
		if adjust != nil {
			adjust(c)
		}
	})
	return e, ttl
}

// checkNotStalled runs the stall check every 50 ms for d and fails the
// test if it fails a run.
func checkNotStalled(t *testing.T, e *env, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if n, err := e.Engine.FailStalled(e.ctx); err != nil || n != 0 {
			t.Fatalf("stall check failed %d runs (%v)", n, err)
		}
	}
}

// A step running longer than the stall timeout, and than its lease many
// times over, is not stalled while its lease is renewed.
func TestStepUnderLiveLeaseIsNotStalled(t *testing.T) {
	// Serial: lease renewals are timed against short leases (machineLatency);
	// other tests on the CPU would blur them.
	g := newGate()
	e, ttl := leaseEnv(t, g, nil)
	p := e.pipeline("long", map[string]any{})
	id, run := e.ingest("long.pdf", "long", &p.ID, nil)
	g.waitStarted(t, run, time.Minute)
	checkNotStalled(t, e, 4*ttl)
	close(g.release)
	if s := e.waitTerminal(time.Minute, id)[id]; s != docflow.StatusCompleted {
		t.Fatalf("a step running longer than the stall timeout was failed: %s %+v", s, e.logs(id))
	}
}

// A run whose next step waits in the queue of a step type that is at
// work is not stalled, however long the queue: its task comes in its
// turn. Once the type has been idle for the stall timeout, it is.
func TestQueuedBehindBusyStepTypeIsNotStalled(t *testing.T) {
	// Serial: it is timed against the stall timeout; other tests on the CPU
	// would blur it.
	g := newGate()
	e, _ := leaseEnv(t, g, func(c *Config) { c.PoolSizes = map[string]int{docflow.StepTest: 1} })
	p := e.pipeline("one at a time", map[string]any{})
	first, firstRun := e.ingest("first.pdf", "first", &p.ID, nil)
	g.waitStarted(t, firstRun, time.Minute)
	second, secondRun := e.ingest("second.pdf", "second", &p.ID, nil)
	// The second, routed, waits for the only actor; once it has waited
	// longer than the stall timeout it would be taken for stalled but for
	// the busy type.
	deadline := time.Now().Add(time.Minute)
	for {
		runs, err := e.Store.StalledRuns(e.ctx, 300*time.Millisecond, nil, 100)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(runs, func(r docflow.StalledRun) bool {
			return r.RunID == secondRun && r.Step != nil && r.Step.Status == docflow.StepQueued
		}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second run never waited past the stall timeout: %+v", e.run(secondRun))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := e.run(secondRun); r.Steps[0].Status != docflow.StepQueued {
		t.Fatalf("second run %+v", r.Steps[0])
	}
	checkNotStalled(t, e, 500*time.Millisecond)
	close(g.release)
	got := e.waitTerminal(time.Minute, first, second)
	if got[first] != docflow.StatusCompleted || got[second] != docflow.StatusCompleted {
		t.Fatalf("statuses %v; logs %+v", got, e.logs(second))
	}
}

// Renewals are timed from when the lease was granted: a claim whose
// answer came late (here 80 % of the lease later) is renewed at once, not
// a third of the lease after the answer, when the lease had lapsed.
func TestLeaseRenewalCountsFromTheGrant(t *testing.T) {
	// Serial: lease renewals are timed against short leases; other tests on
	// the CPU would blur them.
	ttl := max(3*time.Second, 30*machineLatency(t))
	e := newEnv(t, func(c *Config) { c.LeaseTTL = ttl; c.StallInterval = time.Hour })
	// A routed run whose task is never published: only this test runs it.
	var fileID int64
	if err := e.DB.Pool.QueryRow(e.ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id)
		VALUES ('h', 'late.pdf', 's.pdf', 1, 'application/pdf', 'late-run') RETURNING id`).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.Pool.Exec(e.ctx, `INSERT INTO runs (id, file_id) VALUES ('late-run', $1)`, fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.StartRun(e.ctx, "late-run", fileID, nil, []*docflow.PipelineStep{{StepType: docflow.StepTest, Enabled: true}}, "routed"); err != nil {
		t.Fatal(err)
	}
	var sc *stepConsumer
	for _, s := range e.Engine.steps {
		if s.stepType == docflow.StepTest {
			sc = s
		}
	}
	granted := time.Now()
	c, err := e.Store.ClaimStep(e.ctx, docflow.StepClaimRequest{RunID: "late-run", Position: 0, Attempt: 1, Worker: e.Engine.WorkerID(), TTL: ttl})
	if err != nil || c.Outcome != docflow.StepClaimOK {
		t.Fatalf("claim %+v %v", c, err)
	}
	time.Sleep(time.Until(granted.Add(ttl * 8 / 10)))
	stop := sc.renewLease(streams.StepTask{RunID: "late-run", FileID: fileID, Position: 0, StepType: docflow.StepTest, Attempt: 1}, granted)
	defer stop()
	for end := granted.Add(ttl * 3 / 2); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		var live bool
		if err := e.DB.Pool.QueryRow(e.ctx, `SELECT lease_until > now() FROM run_steps WHERE run_id='late-run'`).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if !live {
			t.Fatalf("the lease lapsed %s after it was granted (TTL %s)", time.Since(granted).Round(time.Millisecond), ttl)
		}
	}
}

// The stall check reads the database's clock only: progress and leases
// are written with it, and a worker whose clock runs ahead (here by an
// hour) must not take a run that just moved for a stalled one.
func TestStallCheckReadsTheDatabaseClock(t *testing.T) {
	// Serial: it is timed against the stall timeout; other tests on the CPU
	// would blur it.
	e := newEnv(t, func(c *Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Hour) }
		c.StallTimeout, c.StallInterval = time.Minute, time.Hour
	})
	var fileID int64
	if err := e.DB.Pool.QueryRow(e.ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id)
		VALUES ('h', 'fresh.pdf', 's.pdf', 1, 'application/pdf', 'fresh-run') RETURNING id`).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DB.Pool.Exec(e.ctx, `INSERT INTO runs (id, file_id) VALUES ('fresh-run', $1)`, fileID); err != nil {
		t.Fatal(err)
	}
	// Routed, its task never published: it will stall, but not yet.
	if _, err := e.Store.StartRun(e.ctx, "fresh-run", fileID, nil, []*docflow.PipelineStep{{StepType: docflow.StepTest, Enabled: true}}, "routed"); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Engine.FailStalled(e.ctx); err != nil || n != 0 {
		t.Fatalf("a run routed just now was failed as stalled (%d, %v)", n, err)
	}
	if _, err := e.DB.Pool.Exec(e.ctx, `UPDATE runs SET updated_at = now() - interval '2 minutes' WHERE id='fresh-run'`); err != nil {
		t.Fatal(err)
	}
	if n, err := e.Engine.FailStalled(e.ctx); err != nil || n != 1 {
		t.Fatalf("a run without progress for two minutes was not failed (%d, %v)", n, err)
	}
}
