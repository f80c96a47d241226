package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/internal/groupcommit"
	"docflow/streams"
)

// Consumer group names.
const (
	RouterGroup = "docflow.router"
	DelayGroup  = "docflow.retry"
)

// Group commit of step claims and results (groupcommit.go): transactions of
// each kind in progress at once, and requests per transaction.
const (
	groupFlushers = 2
	groupMax      = 64
)

// inFlightBudget is the unacknowledged deliveries a consumer holds at once.
const inFlightBudget = 512

// StepGroup names the consumer group of a step type.
func StepGroup(stepType string) string { return "docflow.step." + stepType }

// DefaultDirectGrace is how long a store writing outbox rows for
// write-through (storage/postgres.RunStore.WithDirectOutbox) should hold
// them back from the relay: the engine publishes a transaction's messages
// itself right after the commit, and the relay takes over rows still
// unsent after this long.
const DefaultDirectGrace = 5 * time.Second

// Config is what the engine needs. Store, Pipelines, Rules, Brokers,
// Publisher, Actors and Registry are required; zero tuning fields take the
// settings (or their defaults).
type Config struct {
	// Store records runs and steps. When its writes report the outbox rows
	// they wrote (RunWrite.OutboxIDs: a write-through store), the engine
	// publishes those messages right after the commit and marks them sent;
	// otherwise the relay publishes them.
	Store     Store
	Pipelines Pipelines // the router's pipelines
	Rules     Rules     // the router's routing rules
	Brokers   []string
	Publisher streams.Publisher // re-publishes delayed tasks, writes dead letters
	Actors    *actor.Engine
	Registry  *Registry
	// Settings (optional): STEP_TIMEOUT, STEP_RETRY_DELAYS, STEP_POOL_SIZES,
	// STALLED_RUN_TIMEOUT, KAFKA_PARTITIONS.
	Settings docflow.SettingsStore
	Recorder docflow.Recorder  // optional: step metrics
	Blobs    docflow.BlobStore // handed to steps
	Log      zerolog.Logger

	// WorkerID names this process in leases and heartbeats (default
	// host-pid-random).
	WorkerID string
	// StepTypes this worker consumes (default: every known type).
	StepTypes []string
	// NoRouter leaves file.ingested to other workers.
	NoRouter bool
	// SkipRecovery leaves unfinished runs alone at start.
	SkipRecovery bool

	RetryDelays   []time.Duration // default STEP_RETRY_DELAYS
	RetryJitter   float64         // default 0.2; negative = none
	StepTimeout   time.Duration   // default STEP_TIMEOUT
	StallTimeout  time.Duration   // default STALLED_RUN_TIMEOUT
	StallInterval time.Duration   // default StallTimeout/10, at most 1 min
	LeaseTTL      time.Duration   // default 30 s
	// RouteCacheTTL is how long the router reuses a pipeline, rule set or
	// default it read (default 1 s; negative = always read).
	RouteCacheTTL time.Duration
	Heartbeat     time.Duration  // default 2 s
	PoolSizes     map[string]int // default STEP_POOL_SIZES (ocr: cores; others 8)
	Partitions    int            // default KAFKA_PARTITIONS
	// Consumer adjusts every consumer's configuration (tests shorten the
	// group timings).
	Consumer func(*streams.ConsumerConfig)
	// Now is the clock.
	Now func() time.Time
}

// Engine runs the router actors, the step consumers and their step actors,
// the delay relay, the stall detector and the worker heartbeat of one
// process (see the package doc for what is an actor and what a goroutine).
type Engine struct {
	cfg       Config
	log       zerolog.Logger
	store     Store
	pipelines Pipelines
	routing   Rules
	retry     RetryPolicy
	now       func() time.Time

	stepTimeout, stallTimeout, stallInterval, leaseTTL time.Duration
	busy                                               busyTypes // for the stall check

	consumers []*streams.Consumer
	router    *router
	steps     []*stepConsumer
	direct    *streams.WriteThrough
	results   *groupcommit.Committer[docflow.StepCompletion, *docflow.RunWrite]
	claims    *groupcommit.Committer[docflow.StepClaimRequest, *docflow.StepClaim]

	ctx    context.Context
	cancel context.CancelFunc
	// stopDelay stops the retry tiers' delay relay: Stop calls it first,
	// so the tasks it holds until their due time are released at once
	// rather than keeping the delay consumer's Close waiting.
	stopDelay context.CancelFunc
	wg        sync.WaitGroup
	// spawnMu orders spawn's wg.Add before Stop's wg.Wait.
	spawnMu  sync.Mutex
	stopping bool

	startOnce, stopOnce sync.Once
	started             bool
}

// NewEngine checks the configuration and resolves the settings; Start runs it.
func NewEngine(cfg Config) (*Engine, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("new pipeline engine: nil Store")
	case cfg.Pipelines == nil:
		return nil, errors.New("new pipeline engine: nil Pipelines")
	case cfg.Rules == nil:
		return nil, errors.New("new pipeline engine: nil Rules")
	case len(cfg.Brokers) == 0:
		return nil, errors.New("new pipeline engine: no brokers")
	case cfg.Publisher == nil:
		return nil, errors.New("new pipeline engine: nil Publisher")
	case cfg.Actors == nil:
		return nil, errors.New("new pipeline engine: nil actor engine")
	case cfg.Registry == nil:
		return nil, errors.New("new pipeline engine: nil Registry")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Recorder == nil {
		cfg.Recorder = nopRecorder{}
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		cfg.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	// Without Settings (tests) each setting has its catalogue default.
	if cfg.RetryDelays == nil {
		if err := docflow.StepRetryDelays.Validate(cfg.Settings); err != nil {
			return nil, fmt.Errorf("new pipeline engine: %w", err)
		}
		cfg.RetryDelays = docflow.StepRetryDelays.Get(cfg.Settings)
	}
	if cfg.RetryJitter == 0 {
		cfg.RetryJitter = 0.2
	} else if cfg.RetryJitter < 0 {
		cfg.RetryJitter = 0
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = docflow.Positive(docflow.StepTimeout, cfg.Settings)
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = docflow.Positive(docflow.StalledRunTimeout, cfg.Settings)
	}
	if cfg.StallInterval <= 0 {
		cfg.StallInterval = min(cfg.StallTimeout/10, time.Minute)
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.RouteCacheTTL == 0 {
		cfg.RouteCacheTTL = time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 2 * time.Second
	}
	if cfg.PoolSizes == nil {
		sizes, err := ParsePoolSizes(docflow.StepPoolSizes.Get(cfg.Settings))
		if err != nil {
			return nil, fmt.Errorf("new pipeline engine: STEP_POOL_SIZES: %w", err)
		}
		cfg.PoolSizes = sizes
	}
	if cfg.Partitions <= 0 {
		if n := docflow.KafkaPartitions.Get(cfg.Settings); n > 0 {
			cfg.Partitions = n
		} else {
			cfg.Partitions = streams.DefaultPartitions
		}
	}
	if cfg.StepTypes == nil {
		cfg.StepTypes = cfg.Registry.KnownTypes()
	}
	ctx, cancel := context.WithCancel(context.Background())
	store := cfg.Store
	e := &Engine{
		cfg:           cfg,
		log:           cfg.Log.With().Str("component", "pipeline").Str("worker", cfg.WorkerID).Logger(),
		store:         store,
		pipelines:     cfg.Pipelines,
		routing:       cfg.Rules,
		retry:         NewRetryPolicy(cfg.RetryDelays, cfg.RetryJitter),
		now:           cfg.Now,
		stepTimeout:   cfg.StepTimeout,
		stallTimeout:  cfg.StallTimeout,
		stallInterval: cfg.StallInterval,
		leaseTTL:      cfg.LeaseTTL,
		ctx:           ctx,
		cancel:        cancel,
	}
	e.direct = streams.NewWriteThrough(cfg.Publisher, store, e.log)
	e.results = resultCommit(store, e.log, groupFlushers, groupMax)
	e.claims = claimCommit(store, groupFlushers, groupMax)
	return e, nil
}

// ParseDelays parses "60s,300s,900s" (bare numbers are seconds); "" = nil.
// Equal delays are kept: attempts share their delay topic.
func ParseDelays(s string) ([]time.Duration, error) { return docflow.ParseDurations(s) }

// ParsePoolSizes parses "ocr=2,convert_to_pdf=2"; "" = empty.
func ParsePoolSizes(s string) (map[string]int, error) { return docflow.ParsePoolSizes(s) }

// poolSize is the number of actors of a step type.
func (e *Engine) poolSize(stepType string) int {
	if n := e.cfg.PoolSizes[stepType]; n > 0 {
		return n
	}
	switch stepType {
	case docflow.StepOCR:
		// GOMAXPROCS, not NumCPU: it follows a container's CPU limit.
		return runtime.GOMAXPROCS(0)
	case docflow.StepConvertToPDF:
		return max(1, docflow.ConvertConcurrency.Get(e.cfg.Settings))
	}
	return 8
}

// WorkerID names this engine in leases and heartbeats.
func (e *Engine) WorkerID() string { return e.cfg.WorkerID }

// Store is the engine's run store.
func (e *Engine) Store() Store { return e.store }

// Topics is the catalogue the engine creates: every known step type and the
// delay topics of its retry policy.
func (e *Engine) Topics() streams.Topics {
	return streams.Topics{Partitions: e.cfg.Partitions, Steps: e.cfg.Registry.KnownTypes(), Retry: e.retry.Tiers}
}

// Start creates the topics, re-publishes unfinished work (unless
// SkipRecovery) and starts consuming. Stop ends it.
func (e *Engine) Start(ctx context.Context) error {
	err := errors.New("pipeline engine: started twice")
	e.startOnce.Do(func() { err = e.start(ctx) })
	return err
}

func (e *Engine) start(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := streams.EnsureTopics(tctx, e.cfg.Brokers, e.Topics().Configs()); err != nil {
		return fmt.Errorf("start pipeline engine: %w", err)
	}
	if !e.cfg.SkipRecovery {
		n, err := e.Recover(ctx)
		if err != nil {
			return fmt.Errorf("start pipeline engine: %w", err)
		}
		if n > 0 {
			e.log.Info().Int("republished", n).Msg("recovered unfinished runs")
		}
	}
	e.started = true
	if !e.cfg.NoRouter {
		r, err := newRouter(e)
		if err != nil {
			return err
		}
		e.router = r
		if err := e.consume(RouterGroup, "router", []string{streams.TopicFilesIngested}, r.handle, nil); err != nil {
			return err
		}
	}
	for _, t := range e.cfg.StepTypes {
		sc, err := newStepConsumer(e, t)
		if err != nil {
			return err
		}
		e.steps = append(e.steps, sc)
		if err := e.consume(StepGroup(t), t, []string{streams.StepTopic(t)}, sc.handle, nil); err != nil {
			return err
		}
	}
	if len(e.retry.Tiers) > 0 {
		dctx, stopDelay := context.WithCancel(e.ctx)
		e.stopDelay = stopDelay
		dr := streams.NewDelayRelay(dctx, e.cfg.Publisher, e.log, e.now, "task")
		if err := e.consume(DelayGroup, "retry", e.retry.Topics(), dr.Handle, func(c *streams.ConsumerConfig) {
			// NOTE: a delay topic holds tasks in due order; the budget only
			// bounds how many wait in memory.
			c.MaxInFlightPerPartition = 256
		}); err != nil {
			return err
		}
		e.wg.Add(1)
		go func() { defer e.wg.Done(); <-dctx.Done(); dr.Wait() }()
	}
	e.wg.Add(3 + 2*groupFlushers)
	for range groupFlushers {
		go func() { defer e.wg.Done(); e.results.Run(e.ctx) }()
		go func() { defer e.wg.Done(); e.claims.Run(e.ctx) }()
	}
	go func() { defer e.wg.Done(); e.direct.Run(e.ctx, 20*time.Millisecond) }()
	go e.stallLoop()
	go e.heartbeatLoop()
	e.log.Info().Strs("step_types", e.cfg.StepTypes).Bool("router", !e.cfg.NoRouter).Msg("pipeline engine started")
	return nil
}

func (e *Engine) consume(group, step string, topics []string, h streams.Handler, adjust func(*streams.ConsumerConfig)) error {
	cc := streams.ConsumerConfig{
		Brokers: e.cfg.Brokers, GroupID: group, Topics: topics, Handler: h,
		Step: step, DeadLetters: e.cfg.Publisher, MaxInFlight: inFlightBudget,
		Log: e.log,
	}
	if adjust != nil {
		adjust(&cc)
	}
	if e.cfg.Consumer != nil {
		e.cfg.Consumer(&cc)
	}
	c, err := streams.NewConsumer(cc)
	if err != nil {
		return fmt.Errorf("start pipeline engine: %w", err)
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start pipeline engine: %w", err)
	}
	e.consumers = append(e.consumers, c)
	return nil
}

// GroupStats counts the engine's shared transactions since it started:
// the claim batches and the claims they held, the result batches and the
// step results they held. Under load a batch holds up to 64; the mean is
// how well the engine's writes are grouped (the benchmarks print it).
type GroupStats struct {
	ClaimBatches, Claims, ResultBatches, Results int64
}

// GroupStats returns the counts of the engine's shared transactions.
func (e *Engine) GroupStats() GroupStats {
	var g GroupStats
	g.ClaimBatches, g.Claims = e.claims.Stats()
	g.ResultBatches, g.Results = e.results.Stats()
	return g
}

// InFlight is the number of unresolved deliveries over all consumers.
func (e *Engine) InFlight() int {
	n := 0
	for _, c := range e.consumers {
		n += c.InFlight()
	}
	return n
}

// Stop stops consuming, lets in-flight work finish until ctx ends (what is
// left is redelivered to another worker or after a restart), stops the
// actors and removes the worker's heartbeat.
func (e *Engine) Stop(ctx context.Context) error {
	var errs []error
	e.stopOnce.Do(func() {
		if e.stopDelay != nil {
			e.stopDelay()
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range e.consumers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Close(ctx); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		e.cancel()
		// The actors finish what they hold at once (e.ctx is cancelled),
		// then the goroutines they started are waited for.
		if e.router != nil {
			if err := e.router.actors.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		for _, sc := range e.steps {
			if err := sc.actors.Close(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		e.spawnMu.Lock()
		e.stopping = true
		e.spawnMu.Unlock()
		e.wg.Wait()
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := e.store.RemoveWorker(rctx, e.cfg.WorkerID); err != nil {
			e.log.Debug().Err(err).Msg("remove worker heartbeat")
		}
		e.log.Info().Msg("pipeline engine stopped")
	})
	return errors.Join(errs...)
}

// spawn runs fn on a goroutine that Stop waits for, recovered as
// actors.Go does (what names it in the log); once Stop waits, fn is
// dropped (the engine is stopping: the work is redelivered).
func (e *Engine) spawn(what string, fn func()) {
	e.spawnMu.Lock()
	defer e.spawnMu.Unlock()
	if e.stopping {
		return
	}
	e.wg.Add(1)
	actors.Go(e.log, what, func() {
		defer e.wg.Done()
		fn()
	})
}

// withDB runs fn until it succeeds, fails for a reason other than the
// database being unavailable, or the engine stops: while Postgres is away,
// work waits (its Kafka offsets stay uncommitted) instead of failing.
func (e *Engine) withDB(what string, fn func(ctx context.Context) error) error {
	backoff := 50 * time.Millisecond
	warned := false
	for {
		err := fn(e.ctx)
		if err == nil || !transientDB(err) || e.ctx.Err() != nil {
			if err != nil && e.ctx.Err() != nil {
				return e.ctx.Err()
			}
			if warned && err == nil {
				e.log.Info().Str("op", what).Msg("database reachable again")
			}
			return err
		}
		if !warned {
			e.log.Warn().Err(err).Str("op", what).Msg("database unavailable; retrying")
			warned = true
		}
		select {
		case <-time.After(backoff):
		case <-e.ctx.Done():
			return e.ctx.Err()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

func (e *Engine) heartbeatLoop() {
	defer e.wg.Done()
	beat := func() {
		host, _ := os.Hostname()
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
		defer cancel()
		if err := e.store.Heartbeat(ctx, docflow.WorkerBeat{ID: e.cfg.WorkerID, Host: host, PID: os.Getpid(),
			StepTypes: e.cfg.StepTypes, InFlight: e.InFlight()}); err != nil && e.ctx.Err() == nil {
			e.log.Debug().Err(err).Msg("worker heartbeat")
		}
	}
	beat()
	t := time.NewTicker(e.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-e.ctx.Done():
			return
		case <-t.C:
			beat()
		}
	}
}

type nopRecorder struct{}

func (nopRecorder) Record(docflow.Metric)       {}
func (nopRecorder) Flush(context.Context) error { return nil }
func (nopRecorder) Ping(context.Context) error  { return nil }
func (nopRecorder) Close() error                { return nil }
