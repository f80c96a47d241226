package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/alerts"
	"docflow/actors/delivery"
	"docflow/actors/destinations"
	"docflow/actors/indexer"
	"docflow/actors/pipeline"
	"docflow/actors/pipeline/steps"
	"docflow/actors/pipeline/steps/teststep"
	"docflow/actors/sources"
	"docflow/analytics/prom"
	dfhttp "docflow/http"
	"docflow/intake"
	"docflow/integrations/notify"
	"docflow/integrations/smtp"
	"docflow/internal/netguard"
	"docflow/internal/ratelimit"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
)

// Config is what a process is built from: its role and its environment.
// The fields after Version are for tests and benchmarks (apptest); their
// zero values are production behaviour.
type Config struct {
	Role   string              // serve, api, worker
	Getenv func(string) string // the environment (os.Getenv); settings read it below database values
	// Log is the process's logger (default: LOG_LEVEL and LOG_FORMAT,
	// written to Stderr).
	Log     *zerolog.Logger
	Stderr  io.Writer
	Version string // reported by the HTTP API

	// DB is an open, migrated database used instead of DATABASE_URL; Close
	// leaves it open.
	DB *postgres.DB
	// Listener serves the HTTP API instead of listening on LISTEN_ADDR.
	Listener net.Listener
	// NoRelay leaves the outbox rows unpublished (the intake benchmark
	// measures uploads alone).
	NoRelay bool
	// These adjust a component's configuration just before it is built
	// (tests shorten timings).
	Engine  func(*pipeline.Config)
	Relay   func(*streams.RelayConfig)
	Intake  func(*intake.Config)
	Indexer func(*indexer.Config)
	Blobs   func(*blob.Options)
	// Now is the clock of the HTTP server and of the local accounts'
	// reset tokens (nil: the real one; tests move it forward).
	Now func() time.Time
	// Delivery adjusts the event delivery's configuration.
	Delivery func(*delivery.Config)
	// Destinations adjusts the delivery to storage destinations (tests
	// shorten the retries and the group timings).
	Destinations func(*destinations.Config)
	Sources      func(*sources.Config)
	// Alerts adjusts the integration-failure alerts (tests tick faster).
	Alerts func(*alerts.Config)
	// HTTP adjusts the HTTP server's configuration (tests bound what it
	// remembers).
	HTTP func(*dfhttp.Config)
}

// App is one docflow process: Build builds every dependency once and Close
// releases them, newest first. Fields a role does not run stay nil.
type App struct {
	Role string
	cfg  Config

	Log      zerolog.Logger
	DB       *postgres.DB
	Settings *postgres.SettingsStore
	Recorder docflow.Recorder
	// Reports answers the analytics API (the recorder's store).
	Reports docflow.Analytics
	// RecorderStats are the recorder's counters (nil when recording is off).
	RecorderStats func() docflow.RecorderStats
	// Prom keeps the Prometheus series GET /metrics exports; Recorder
	// feeds it beside the analytics store.
	Prom *prom.Recorder
	// MetricsServer serves a worker's /metrics (WORKER_METRICS_ADDR).
	MetricsServer *dfhttp.MetricsServer
	// ProfileServer serves runtime profiles (DEBUG_PPROF_ADDR).
	ProfileServer *dfhttp.ProfileServer
	Broker        *streams.Broker
	Producer      *streams.Producer
	Relay         *streams.Relay
	HTTP          *dfhttp.Server
	// Accounts are the local accounts (serve and api).
	Accounts *postgres.AccountStore
	// users answers what a user id may do now (userstate.go); userStore
	// reads it from the tables of accounts.
	users       *userStates
	userStore   *postgres.UserStateStore
	Brokers     []string
	Workdir     string
	Blobs       *blob.Local
	Files       *postgres.FileStore
	Intake      *intake.Service
	Runs        *postgres.RunStore
	Index       docflow.SearchIndex
	SearchStore *postgres.SearchStore
	Embeddings  *steps.EmbeddingRuns
	Steps       *steps.Steps
	Registry    *pipeline.Registry
	Engine      *pipeline.Engine
	// Actors is the process's actor engine (serve, api, worker).
	Actors *actor.Engine
	// Webhooks stores webhooks and their deliveries; Delivery delivers
	// events to them (serve, worker).
	Webhooks *postgres.WebhookStore
	// Devices stores the devices registered for push notifications.
	Devices  *postgres.DeviceStore
	Delivery *delivery.Service
	// DestinationStore keeps the deliveries to storage destinations;
	// Destinations makes them (serve, worker).
	DestinationStore *postgres.DestinationStore
	Destinations     *destinations.Service
	// Notifier sends admin notifications through NOTIFICATION_URLS: from
	// the delivery core (subscriber "admin") and test-notification.
	Notifier *notify.Notifier
	// Sources is the supervisor of the IMAP sources (serve, worker).
	Sources *actor.PID
	// Alerts tells the admins about integrations failing too long
	// (serve, worker).
	Alerts *actor.PID

	cipher *postgres.Cipher
	// notices are shown to administrators on the home page (notices.go).
	notices notices
	// sso is single sign-on's state (sso.go); its provider check is wired
	// once the HTTP API is built.
	sso *ssoState
	// reset is the system reset (reset.go).
	reset *systemReset
	// limits are the rate limits every process shares (ratelimit.go).
	limits *ratelimit.Shared

	listener net.Listener
	closers  []closer
	serveErr chan error
	// sweepDelay is how long after start the first blob sweep runs
	// (default blobSweepDelay); tests shorten it.
	sweepDelay time.Duration
}

// closer is one part's release, named for the shutdown's log.
type closer struct {
	name  string
	close func(ctx context.Context) error
	// drain marks a part that takes work in (the HTTP server, a consumer
	// group's members): the drains close together, before the rest.
	drain bool
}

// onClose adds a part that Close releases after the drains, newest
// first.
func (m *App) onClose(name string, f func(ctx context.Context) error) {
	m.closers = append(m.closers, closer{name: name, close: f})
}

// onDrain adds a part that stops taking work in and finishes what it
// holds when it closes. Close closes every drain at once: each waits for
// its own work and its consumer groups' leaving, which one after another
// added up to the shutdown's time on a busy machine. A drain may use the
// parts added by onClose (the database, the producer, the broker, the
// index), never another drain.
func (m *App) onDrain(name string, f func(ctx context.Context) error) {
	m.closers = append(m.closers, closer{name: name, close: f, drain: true})
}

// slowClose is how long a part may take to close before the shutdown's
// log says so at info: a shutdown that nears its deadline then shows
// which part held it.
const slowClose = time.Second

// Close releases everything Build built: first the drains together (the
// HTTP server stops accepting and answers what it holds, the workers
// finish and commit and leave their groups), then the rest newest first
// (the relay stops, the broker and the database close). Each part's time
// is logged (debug; info when it took slowClose or more, or failed). A
// nil App closes nothing.
func (m *App) Close(ctx context.Context) error {
	if m == nil {
		return nil
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	closeOne := func(c closer) {
		start := time.Now()
		err := c.close(ctx)
		took := time.Since(start)
		ev := m.Log.Debug()
		if took >= slowClose || err != nil {
			ev = m.Log.Info()
		}
		ev.Str("part", c.name).Dur("took", took).AnErr("error", err).Msg("closed")
		if err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("close %s: %w", c.name, err))
			mu.Unlock()
		}
	}
	for _, c := range m.closers {
		if c.drain {
			wg.Go(func() { closeOne(c) })
		}
	}
	wg.Wait()
	for _, c := range slices.Backward(m.closers) {
		if !c.drain {
			closeOne(c)
		}
	}
	m.closers = nil
	return errors.Join(errs...)
}

// Build builds the process of cfg.Role (serve, api or worker) and starts
// it: serve runs everything, api the HTTP API, the relay and (with the
// embedded index) the search indexer, worker the pipeline engine, the
// relay and the watch folders. ctx is the process's context: the watch
// folders and the blob sweep run until it is done or Close. On error Build
// releases what it built.
func Build(ctx context.Context, cfg Config) (*App, error) {
	switch cfg.Role {
	case "serve", "api", "worker":
	default:
		return nil, fmt.Errorf("build docflow: unknown role %q (serve, api or worker)", cfg.Role)
	}
	m := newApp(cfg)
	if err := m.run(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, m.Close(cctx))
	}
	return m, nil
}

// OpenStore builds what the one-shot commands (reindex, sweep-blobs) need:
// the logger, WORKDIR, PostgreSQL (created and migrated) with a pool of
// poolSize connections, and the settings. Close releases them.
func OpenStore(ctx context.Context, cfg Config, poolSize int32) (*App, error) {
	m := newApp(cfg)
	if _, err := m.openStore(ctx, poolSize); err != nil {
		return nil, errors.Join(err, m.Close(context.Background()))
	}
	return m, nil
}

func newApp(cfg Config) *App {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	return &App{Role: cfg.Role, cfg: cfg}
}

// run builds the process for its role and starts serving.
func (m *App) run(ctx context.Context) error {
	// NOTE: pgx's default pool (max(4, cores)) starves the step workers,
	// whose claims and results are statements of their own.
	poolSize := int32(32)
	if m.Role == "api" {
		poolSize = 16
	}
	secret, err := m.openStore(ctx, poolSize)
	if err != nil {
		return err
	}
	m.Settings.Start()
	m.startUserStates()

	if err := m.startRecorder(ctx); err != nil {
		return err
	}
	m.startPrometheus()

	if err := m.startStreams(ctx, m.Workdir); err != nil {
		return err
	}
	if err := m.startCore(ctx); err != nil {
		return err
	}
	// One actor engine per process: the pipeline's actors and the
	// indexer's run on it.
	if m.Actors, err = actors.NewEngine(m.Log); err != nil {
		return err
	}
	m.Webhooks = postgres.NewWebhookStore(m.DB, m.cipher, delivery.AttemptMessage)
	m.Webhooks.AdminEvents = delivery.AdminEvents(m.Settings)
	m.Webhooks.HookOwnerAdmin = m.users.isAdmin
	m.Notifier = notify.New(m.Settings, m.Log)
	mailer := smtp.New(m.Settings)
	mailer.Recorder = m.Recorder
	m.Notifier.Mailer, m.Notifier.Recorder = mailer, m.Recorder
	m.Devices = postgres.NewDeviceStore(m.DB)
	m.DestinationStore = postgres.NewDestinationStore(m.DB, m.cipher, destinations.TaskMessage)
	if m.Role == "serve" || m.Role == "worker" {
		if err := m.startEngine(ctx); err != nil {
			return err
		}
		if err := m.startDelivery(ctx); err != nil {
			return err
		}
		if err := m.startDestinations(ctx); err != nil {
			return err
		}
		if err := m.startSources(); err != nil {
			return err
		}
		if err := m.startAlerts(); err != nil {
			return err
		}
	}
	m.startSamplers()
	if err := m.startWorkerMetrics(); err != nil {
		return err
	}
	if err := m.startProfiles(); err != nil {
		return err
	}
	m.reset = m.newSystemReset()
	if m.Role == "serve" || m.Role == "api" {
		if err := m.startSearch(ctx); err != nil {
			return err
		}
		if err := m.resetOnStartup(ctx); err != nil {
			return err
		}
		if err := m.startHTTP(ctx, secret); err != nil {
			return err
		}
	}
	return m.listenControl(ctx)
}

// openStore builds what every command needs first: the logger, WORKDIR,
// the session secret, PostgreSQL (created and migrated) and the settings.
// It returns the session secret. A setting the service cannot use stops it
// here, with a message naming the setting, its value and why: first those
// read from the environment before the database, then every effective
// value.
func (m *App) openStore(ctx context.Context, poolSize int32) (string, error) {
	env := newEnvSettings(m.cfg.Getenv)
	if m.cfg.Log != nil {
		m.Log = *m.cfg.Log
	} else {
		m.Log = newLogger(logLevel(env), docflow.LogFormat.Get(env), m.cfg.Stderr)
	}
	if err := env.validate(bootstrapSettings...); err != nil {
		return "", err
	}
	m.Workdir = docflow.Workdir.Get(env)
	if err := os.MkdirAll(m.Workdir, 0o750); err != nil {
		return "", fmt.Errorf("create WORKDIR %s: %w", m.Workdir, err)
	}
	secret, err := sessionSecret(docflow.SessionSecret.Get(env), m.Workdir, m.Log)
	if err != nil {
		return "", err
	}
	cipher, err := postgres.NewCipher(secret)
	if err != nil {
		return "", err
	}
	m.cipher = cipher
	m.Log.Info().Str("role", m.Role).Str("version", m.cfg.Version).Msg("starting docflow")
	if m.cfg.DB != nil {
		m.DB = m.cfg.DB
	} else {
		m.Log.Info().Str("database", RedactURL(docflow.DatabaseURL.Get(env))).Msg("connecting to PostgreSQL (creating the database and applying migrations if needed)")
		m.DB, err = postgres.Open(ctx, docflow.DatabaseURL.Get(env), poolSize)
		if err != nil {
			return "", err
		}
		m.onClose("database", func(context.Context) error { m.DB.Close(); return nil })
	}
	m.Settings, err = postgres.NewSettingsStore(ctx, m.DB, cipher, m.cfg.Getenv, m.Log)
	if err != nil {
		return "", err
	}
	m.onClose("settings", func(context.Context) error { m.Settings.Close(); return nil })
	m.Settings.EnvOnly(envOnlySettings...)
	if err := m.Settings.Validate(); err != nil {
		return "", err
	}
	// The log level again, as the database's values say (LOG_LEVEL,
	// DEBUG): what is built from here on logs at it.
	if lvl := logLevel(m.Settings); lvl != logLevel(env) {
		if l, err := zerolog.ParseLevel(strings.ToLower(lvl)); err == nil {
			m.Log = m.Log.Level(l)
		}
	}
	return secret, nil
}

// startSources starts the supervisor of the IMAP sources: every process
// that runs workers competes for the sources' leases. Close stops it first
// among the workers, handing its leases over.
func (m *App) startSources() error {
	cfg := sources.Config{Store: postgres.NewSourceStore(m.DB, m.cipher), Intake: m.Intake,
		Dial: m.integrationDialer().DialContext, Recorder: m.Recorder, Log: m.Log.With().Str("component", "sources").Logger()}
	if m.cfg.Sources != nil {
		m.cfg.Sources(&cfg)
	}
	pid, err := sources.Spawn(m.Actors, cfg)
	if err != nil {
		return err
	}
	m.Sources = pid
	m.stopOnClose("sources", pid)
	return nil
}

// startCore builds what every role shares: the blob store, the file
// repository and the intake service; serve and worker also poll the watch
// folders (each new file is recorded once, whichever process sees it first).
func (m *App) startCore(ctx context.Context) error {
	var err error
	mode := blob.SyncMode(strings.ToLower(strings.TrimSpace(docflow.BlobSync.Get(m.Settings))))
	if mode != blob.SyncFile {
		mode = blob.SyncGroup
	}
	opts := blob.Options{Sync: mode}
	if m.cfg.Blobs != nil {
		m.cfg.Blobs(&opts)
	}
	m.Blobs, err = blob.Open(filepath.Join(m.Workdir, "blobs"), opts)
	if err != nil {
		return fmt.Errorf("open blob store: %w", err)
	}
	m.onClose("blob store", func(context.Context) error { return m.Blobs.Close() })
	m.Files = postgres.NewFileStore(m.DB)
	m.Files.SetListConcurrency(docflow.ListQueryConcurrency.Get(m.Settings))
	m.Runs = postgres.NewRunStore(m.DB)
	m.Embeddings = steps.NewEmbeddingRuns(postgres.NewEmbeddingStore(m.DB))
	m.startRateLimits(ctx)
	icfg := intake.Config{Files: m.Files, Blobs: m.Blobs, Settings: m.Settings, Recorder: m.Recorder,
		Log: m.Log.With().Str("component", "intake").Logger(), WorkDir: m.Workdir, SharedLimits: m.limits}
	if m.cfg.Intake != nil {
		m.cfg.Intake(&icfg)
	}
	m.Intake, err = intake.New(icfg)
	if err != nil {
		return err
	}
	m.onClose("intake", func(context.Context) error { m.Intake.Close(); return nil })
	if m.Role == "serve" || m.Role == "worker" {
		w := m.Intake.NewWatcher()
		w.Start(ctx)
		m.onClose("watch folders", func(context.Context) error { w.Stop(); return nil })
	}
	m.startBlobSweep(ctx)
	return nil
}

// blobSweepDelay is how long after start the first blob sweep runs: not
// at start-up, when the process has more urgent work and several
// processes started together would all try at once.
const blobSweepDelay = 5 * time.Minute

// startEngine starts the pipeline: the router, one consumer group and
// actor pool per step type, retries, dead letters, stall detection and
// recovery of unfinished runs.
func (m *App) startEngine(ctx context.Context) error {
	if err := m.startSteps(); err != nil {
		return err
	}
	ecfg := pipeline.Config{Store: postgres.NewRunStore(m.DB).WithDirectOutbox(pipeline.DefaultDirectGrace),
		Pipelines: postgres.NewPipelineStore(m.DB), Rules: postgres.NewRoutingStore(m.DB), Brokers: m.Brokers, Publisher: m.Producer, Actors: m.Actors,
		Registry: m.Registry, Settings: m.Settings, Recorder: m.Recorder, Blobs: m.Blobs, Log: m.Log}
	if m.cfg.Engine != nil {
		m.cfg.Engine(&ecfg)
	}
	var err error
	if m.Engine, err = pipeline.NewEngine(ecfg); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m.Log.Info().Msg("starting pipeline workers (joining consumer groups, recovering unfinished runs)")
	if err := m.Engine.Start(sctx); err != nil {
		return fmt.Errorf("start pipeline engine: %w", err)
	}
	m.onDrain("pipeline engine", func(ctx context.Context) error { return m.Engine.Stop(ctx) })
	return nil
}

// startSteps builds the standard steps and registers them, once: the
// registry every engine of this process runs. ENABLE_TEST_STEP adds the
// test step (fault drills, multi-process tests, benchmarks).
func (m *App) startSteps() error {
	st, err := steps.New(steps.Deps{Settings: m.Settings, Rules: postgres.NewClassificationStore(m.DB), Originals: m.Runs,
		Queue: m.DestinationStore, Recorder: m.Recorder, Log: m.Log.With().Str("component", "steps").Logger(), TempDir: filepath.Join(m.Workdir, "tmp"), WorkDir: m.Workdir})
	if err != nil {
		return err
	}
	m.onClose("steps", func(context.Context) error { return st.Close() })
	m.Steps = st
	all := st.All()
	if docflow.EnableTestStep.Get(m.Settings) {
		all = append(all, teststep.New())
	}
	m.Registry = pipeline.NewRegistry(all...)
	return nil
}

// startStreams connects to Kafka (or starts the embedded broker), creates
// the topics and starts the outbox relay.
func (m *App) startStreams(ctx context.Context, workdir string) error {
	m.Brokers = docflow.KafkaBrokers.Get(m.Settings)
	if len(m.Brokers) == 0 {
		if m.Role != "serve" {
			return fmt.Errorf("KAFKA_BROKERS is empty: `docflow %s` needs a broker; start one with `docflow broker` and set KAFKA_BROKERS to the address it prints, or use `docflow serve`", m.Role)
		}
		m.Broker = streams.NewBroker(streams.BrokerConfig{DataDir: filepath.Join(workdir, "broker"), Retention: docflow.BrokerRetention.Get(m.Settings), Log: m.Log})
		if err := m.Broker.Start(); err != nil {
			return fmt.Errorf("start embedded broker: %w", err)
		}
		m.onClose("embedded broker", func(context.Context) error { m.Broker.Close(); return nil })
		m.Brokers = m.Broker.Addrs()
		m.Log.Info().Strs("addrs", m.Brokers).Msg("embedded Kafka-protocol broker started")
	}
	topics := streams.DefaultTopics()
	if n := docflow.KafkaPartitions.Get(m.Settings); n > 0 {
		topics.Partitions = n
	}
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := streams.EnsureTopics(tctx, m.Brokers, topics.Configs()); err != nil {
		return fmt.Errorf("create topics on %s: %w", strings.Join(m.Brokers, ","), err)
	}
	if err := streams.EnsureControlTopic(tctx, m.Brokers); err != nil {
		return fmt.Errorf("create the control topic on %s: %w", strings.Join(m.Brokers, ","), err)
	}
	p, err := streams.NewProducer(streams.ProducerConfig{Brokers: m.Brokers})
	if err != nil {
		return err
	}
	m.Producer = p
	m.onClose("producer", func(context.Context) error { return p.Close() })
	if m.cfg.NoRelay {
		return nil
	}
	rcfg := streams.RelayConfig{Store: postgres.NewOutbox(m.DB), Publisher: p, Log: m.Log.With().Str("component", "relay").Logger()}
	if m.cfg.Relay != nil {
		m.cfg.Relay(&rcfg)
	}
	m.Relay, err = streams.NewRelay(rcfg)
	if err != nil {
		return err
	}
	m.Relay.Start()
	m.onClose("outbox relay", func(context.Context) error { m.Relay.Close(); return nil })
	return nil
}

// Wait blocks until ctx is done or the HTTP server fails.
func (m *App) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.serveErr:
		return err
	}
}

// pingKafka reports whether a broker answers a TCP connection. The
// brokers are the operator's (KAFKA_BROKERS), allowed on private
// addresses; the dial is still netguard's, the one way out.
func (m *App) pingKafka(ctx context.Context) error {
	d := netguard.Dialer{AllowPrivate: true}
	for _, b := range m.Brokers {
		c, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			c.Close()
			return nil
		}
	}
	return fmt.Errorf("no broker reachable at %s", strings.Join(m.Brokers, ","))
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RedactURL hides the password in a URL, for logs and messages.
func RedactURL(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		if j := strings.Index(u[i+3:], "@"); j >= 0 {
			cred := u[i+3 : i+3+j]
			if k := strings.Index(cred, ":"); k >= 0 {
				return u[:i+3] + cred[:k] + ":xxxxx" + u[i+3+j:]
			}
		}
	}
	return u
}
