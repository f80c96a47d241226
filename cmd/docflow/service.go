package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/actors/pipeline"
	"docflow/actors/pipeline/steps"
	"docflow/analytics"
	chanalytics "docflow/analytics/clickhouse"
	pganalytics "docflow/analytics/postgres"
	dfhttp "docflow/http"
	"docflow/intake"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
)

// Main is one docflow process: it builds every dependency once in Run and
// releases them in Close, in reverse order.
type Main struct {
	Role   string // serve, api, worker
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer

	Log         zerolog.Logger
	DB          *postgres.DB
	Settings    *postgres.SettingsService
	Recorder    docflow.Recorder
	Broker      *streams.Broker
	Producer    *streams.Producer
	Relay       *streams.Relay
	HTTP        *dfhttp.Server
	Brokers     []string
	Workdir     string
	Blobs       *blob.Local
	Files       *postgres.FileService
	Intake      *intake.Service
	Runs        *postgres.RunStore
	Index       docflow.SearchIndex
	SearchStore *postgres.SearchService
	Engine      *pipeline.Engine

	listener net.Listener
	closers  []func(ctx context.Context) error
	serveErr chan error
	// sweepDelay is how long after start the first blob sweep runs
	// (default blobSweepDelay); tests shorten it.
	sweepDelay time.Duration
}

func (m *Main) onClose(f func(ctx context.Context) error) { m.closers = append(m.closers, f) }

// Close releases everything Run built, newest first.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	for i := len(m.closers) - 1; i >= 0; i-- {
		if err := m.closers[i](ctx); err != nil {
			errs = append(errs, err)
		}
	}
	m.closers = nil
	return errors.Join(errs...)
}

func runService(ctx context.Context, role string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "address to listen on (overrides LISTEN_ADDR)")
	showSettings := fs.Bool("settings", false, "print every setting with its default and description, then exit")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: docflow %s [flags]\n\n%s\n\nFlags:\n", role, roleHelp[role])
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *showSettings {
		printSettings(stdout)
		return nil
	}
	getenv := os.Getenv
	if *listen != "" {
		getenv = func(k string) string {
			if k == "LISTEN_ADDR" {
				return *listen
			}
			return os.Getenv(k)
		}
	}
	m := &Main{Role: role, Getenv: getenv, Stdout: stdout, Stderr: stderr}
	err := m.Run(ctx)
	if err == nil {
		err = m.Wait(ctx)
	}
	m.Log.Info().Msg("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cerr := m.Close(sctx); cerr != nil && err == nil {
		err = cerr
	}
	if err == nil {
		m.Log.Info().Msg("stopped")
	}
	return err
}

var roleHelp = map[string]string{
	"serve":  "Runs the HTTP API, the pipeline workers and the outbox relay in one process.\nWith KAFKA_BROKERS empty it starts the embedded Kafka-protocol broker too.",
	"api":    "Runs the HTTP API and the outbox relay. Stateless: run several behind a load balancer.\nNeeds KAFKA_BROKERS (or a `docflow broker`).",
	"worker": "Runs the pipeline workers: joins the step consumer groups and processes documents.\nNeeds KAFKA_BROKERS (or a `docflow broker`). Add workers to add throughput.",
}

// Run builds the process for its role and starts serving.
func (m *Main) Run(ctx context.Context) error {
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
	m.Settings.Start(5 * time.Second)

	if err := m.startRecorder(ctx); err != nil {
		return err
	}

	if err := m.startStreams(ctx, m.Workdir); err != nil {
		return err
	}
	if err := m.startCore(ctx); err != nil {
		return err
	}
	if m.Role == "serve" || m.Role == "worker" {
		if err := m.startEngine(ctx); err != nil {
			return err
		}
	}
	if m.Role == "serve" || m.Role == "api" {
		if err := m.startSearch(ctx); err != nil {
			return err
		}
		if err := m.startHTTP(ctx, secret); err != nil {
			return err
		}
	}
	return nil
}

// openStore builds what every command needs first: the logger, WORKDIR,
// the session secret, PostgreSQL (created and migrated) and the settings.
// It returns the session secret. A setting the service cannot use stops it
// here, with a message naming the setting, its value and why: first those
// read from the environment before the database, then every effective
// value.
func (m *Main) openStore(ctx context.Context, poolSize int32) (string, error) {
	env := newEnvSettings(m.Getenv)
	m.Log = newLogger(env.Get("LOG_LEVEL"), env.Get("LOG_FORMAT"), m.Stderr)
	if err := env.validate(bootstrapSettings...); err != nil {
		return "", err
	}
	m.Workdir = env.Get("WORKDIR")
	if err := os.MkdirAll(m.Workdir, 0o750); err != nil {
		return "", fmt.Errorf("create WORKDIR %s: %w", m.Workdir, err)
	}
	secret, err := sessionSecret(env.Get("SESSION_SECRET"), m.Workdir, m.Log)
	if err != nil {
		return "", err
	}
	cipher, err := postgres.NewCipher(secret)
	if err != nil {
		return "", err
	}
	m.Log.Info().Str("role", m.Role).Str("version", Version).Msg("starting docflow")
	m.Log.Info().Str("database", redactURL(env.Get("DATABASE_URL"))).Msg("connecting to PostgreSQL (creating the database and applying migrations if needed)")
	m.DB, err = postgres.Open(ctx, env.Get("DATABASE_URL"), poolSize)
	if err != nil {
		return "", err
	}
	m.onClose(func(context.Context) error { m.DB.Close(); return nil })
	m.Settings, err = postgres.NewSettingsService(ctx, m.DB, cipher, m.Getenv, m.Log)
	if err != nil {
		return "", err
	}
	m.onClose(func(context.Context) error { m.Settings.Close(); return nil })
	if err := m.Settings.Validate(); err != nil {
		return "", err
	}
	return secret, nil
}

// startRecorder records metrics in ClickHouse when CLICKHOUSE_URL is set,
// else in PostgreSQL.
func (m *Main) startRecorder(ctx context.Context) error {
	opts := analytics.Options{Logger: &m.Log}
	if u := m.Settings.Get("CLICKHOUSE_URL"); u != "" {
		rec, err := chanalytics.Open(ctx, chanalytics.Config{URL: u}, opts)
		if err != nil {
			return fmt.Errorf("connect ClickHouse at %s: %w (unset CLICKHOUSE_URL to record metrics in PostgreSQL)", redactURL(u), err)
		}
		m.Recorder = rec
		m.onClose(func(context.Context) error { return rec.Close() })
		m.Log.Info().Str("url", redactURL(u)).Msg("recording metrics in ClickHouse")
		return nil
	}
	rec, err := pganalytics.New(m.DB.Pool, opts)
	if err != nil {
		return err
	}
	m.Recorder = rec
	m.onClose(func(context.Context) error { return rec.Close() })
	return nil
}

// startCore builds what every role shares: the blob store, the file
// repository and the intake service; serve and worker also poll the watch
// folders (each new file is recorded once, whichever process sees it first).
func (m *Main) startCore(ctx context.Context) error {
	var err error
	mode := blob.SyncMode(strings.ToLower(strings.TrimSpace(m.Settings.Get("BLOB_SYNC"))))
	if mode != blob.SyncFile {
		mode = blob.SyncGroup
	}
	m.Blobs, err = blob.Open(filepath.Join(m.Workdir, "blobs"), blob.Options{Sync: mode})
	if err != nil {
		return fmt.Errorf("open blob store: %w", err)
	}
	m.onClose(func(context.Context) error { return m.Blobs.Close() })
	m.Files = postgres.NewFileService(m.DB)
	m.Files.SetListConcurrency(docflow.SettingInt(m.Settings, "LIST_QUERY_CONCURRENCY", 0))
	m.Runs = postgres.NewRunStore(m.DB)
	m.Intake, err = intake.New(intake.Config{Files: m.Files, Blobs: m.Blobs, Settings: m.Settings,
		Log: m.Log.With().Str("component", "intake").Logger(), WorkDir: m.Workdir})
	if err != nil {
		return err
	}
	m.onClose(func(context.Context) error { m.Intake.Close(); return nil })
	if m.Role == "serve" || m.Role == "worker" {
		w := m.Intake.NewWatcher()
		w.Start(ctx)
		m.onClose(func(context.Context) error { w.Stop(); return nil })
	}
	m.startBlobSweep(ctx)
	return nil
}

// blobSweepDelay is how long after start the first blob sweep runs: not
// at start-up, when the process has more urgent work and several
// processes started together would all try at once.
const blobSweepDelay = 5 * time.Minute

// startBlobSweep sweeps the blob store every BLOB_SWEEP_INTERVAL, removing
// the blobs no record references: the pipeline's intermediate PDFs,
// processed versions and sidecars replaced by a new run, uploads whose
// intake failed. The loop stops on Close, before the blob store and the
// database close.
func (m *Main) startBlobSweep(ctx context.Context) {
	interval := time.Duration(docflow.SettingInt(m.Settings, "BLOB_SWEEP_INTERVAL", 21600)) * time.Second
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
			sweepBlobs(ctx, m.Blobs, m.Files, m.Settings, log) //nolint:errcheck // logged
			t.Reset(interval)
		}
	}()
	m.onClose(func(cctx context.Context) error {
		cancel()
		select {
		case <-done:
		case <-cctx.Done():
		}
		return nil
	})
}

// sweepBlobs runs one sweep of blobs under the sweep lock, so one process
// sweeps at a time, and logs its counts. ran is false when another process
// holds the lock: the round is skipped.
func sweepBlobs(ctx context.Context, blobs *blob.Local, files *postgres.FileService, settings docflow.SettingsService, log zerolog.Logger) (st blob.SweepStats, ran bool, err error) {
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
func blobSweepMinAge(settings docflow.SettingsService, log zerolog.Logger) time.Duration {
	age := time.Duration(docflow.SettingInt(settings, "BLOB_SWEEP_MIN_AGE", 86400)) * time.Second
	step := docflow.SettingInt(settings, "STEP_TIMEOUT", 600)
	if step <= 0 {
		step = 600 // as the pipeline engine reads it
	}
	if floor := 2 * time.Duration(step) * time.Second; age < floor {
		log.Warn().Str("configured", age.String()).Str("used", floor.String()).
			Msg("BLOB_SWEEP_MIN_AGE is below twice STEP_TIMEOUT: using twice STEP_TIMEOUT")
		age = floor
	}
	return age
}

// startEngine starts the pipeline: the router, one consumer group and
// actor pool per step type, retries, dead letters, stall detection and
// recovery of unfinished runs.
func (m *Main) startEngine(ctx context.Context) error {
	st, err := steps.New(steps.Deps{Settings: m.Settings, Rules: postgres.NewClassificationService(m.DB),
		Log: m.Log.With().Str("component", "steps").Logger(), TempDir: filepath.Join(m.Workdir, "tmp"), WorkDir: m.Workdir})
	if err != nil {
		return err
	}
	m.onClose(func(context.Context) error { return st.Close() })
	ae, err := actors.NewEngine(m.Log)
	if err != nil {
		return err
	}
	reg := pipeline.NewRegistry(append(st.All(),
		pipeline.CheckDuplicates(m.Runs, func() bool { return docflow.SettingBool(m.Settings, "ENABLE_DEDUPLICATION", true) }),
		pipeline.SendToDestinations(pipeline.LocalDestinations(func() string { return m.Settings.Get("LOCAL_DESTINATION_DIR") })),
	)...)
	m.Engine, err = pipeline.NewEngine(pipeline.Config{Store: postgres.NewRunStore(m.DB).WithDirectOutbox(pipeline.DefaultDirectGrace),
		Pipelines: postgres.NewPipelineService(m.DB), Rules: postgres.NewRoutingService(m.DB), Brokers: m.Brokers, Publisher: m.Producer, Actors: ae,
		Registry: reg, Settings: m.Settings, Recorder: m.Recorder, Blobs: m.Blobs, Log: m.Log})
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	m.Log.Info().Msg("starting pipeline workers (joining consumer groups, recovering unfinished runs)")
	if err := m.Engine.Start(sctx); err != nil {
		return fmt.Errorf("start pipeline engine: %w", err)
	}
	m.onClose(func(ctx context.Context) error { return m.Engine.Stop(ctx) })
	return nil
}

// startStreams connects to Kafka (or starts the embedded broker), creates
// the topics and starts the outbox relay.
func (m *Main) startStreams(ctx context.Context, workdir string) error {
	m.Brokers = splitList(m.Settings.Get("KAFKA_BROKERS"))
	if len(m.Brokers) == 0 {
		if m.Role != "serve" {
			return fmt.Errorf("KAFKA_BROKERS is empty: `docflow %s` needs a broker; start one with `docflow broker` and set KAFKA_BROKERS to the address it prints, or use `docflow serve`", m.Role)
		}
		m.Broker = streams.NewBroker(streams.BrokerConfig{DataDir: filepath.Join(workdir, "broker"), Log: m.Log})
		if err := m.Broker.Start(); err != nil {
			return fmt.Errorf("start embedded broker: %w", err)
		}
		m.onClose(func(context.Context) error { m.Broker.Close(); return nil })
		m.Brokers = m.Broker.Addrs()
		m.Log.Info().Strs("addrs", m.Brokers).Msg("embedded Kafka-protocol broker started")
	}
	topics := streams.DefaultTopics()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := streams.EnsureTopics(tctx, m.Brokers, topics.Configs()); err != nil {
		return fmt.Errorf("create topics on %s: %w", strings.Join(m.Brokers, ","), err)
	}
	p, err := streams.NewProducer(streams.ProducerConfig{Brokers: m.Brokers})
	if err != nil {
		return err
	}
	m.Producer = p
	m.onClose(func(context.Context) error { return p.Close() })
	m.Relay, err = streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(m.DB), Publisher: p, Log: m.Log.With().Str("component", "relay").Logger()})
	if err != nil {
		return err
	}
	m.Relay.Start()
	m.onClose(func(context.Context) error { m.Relay.Close(); return nil })
	return nil
}

// startHTTP builds the API and starts listening.
func (m *Main) startHTTP(ctx context.Context, secret string) error {
	addr := m.Settings.Get("LISTEN_ADDR")
	if !docflow.SettingBool(m.Settings, "AUTH_ENABLED", false) && !isLoopback(addr) {
		m.Log.Warn().Str("listen", addr).Msg("AUTH_ENABLED is false and the server listens on a non-loopback address: anyone who reaches it has full access")
	}
	tokens := postgres.NewTokenService(m.DB)
	// Tokens made without authentication by earlier versions had no owner;
	// they are the admin account's, like those made now.
	admin := docflow.AdminUserID(m.Settings)
	if n, err := tokens.AdoptOwnerlessTokens(ctx, admin); err != nil {
		return err
	} else if n > 0 {
		m.Log.Info().Int64("tokens", n).Str("owner", admin).Msg("API tokens without an owner now belong to the admin account")
	}
	sessions := postgres.NewSessionService(m.DB)
	srv := dfhttp.NewServer(dfhttp.Config{
		Log:           m.Log.With().Str("component", "http").Logger(),
		Settings:      m.Settings,
		Tokens:        tokens,
		Sessions:      sessions,
		Recorder:      m.Recorder,
		Version:       Version,
		SessionSecret: secret,
		// A changed local password (or a deactivated account) ends its sessions.
		LocalPasswordStamp: sessions.LocalPasswordStamp,
	})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "database", Critical: true, Check: m.DB.Ping})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "queue", Check: m.pingKafka})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "search", Check: m.Index.Ping})
	srv.AddHealthCheck(dfhttp.HealthCheck{Name: "analytics", Check: m.Recorder.Ping})
	m.mountResources(srv)
	m.HTTP = srv
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another docflow running? set LISTEN_ADDR)", addr, err)
	}
	m.listener = ln
	m.serveErr = make(chan error, 1)
	go func() { m.serveErr <- srv.Serve(ln) }()
	m.onClose(func(ctx context.Context) error { return srv.Shutdown(ctx) })
	m.Log.Info().Str("url", srv.BaseURL()).Str("listen", ln.Addr().String()).Msg("docflow is ready")
	return nil
}

// mountResources mounts the resource routes on srv.
func (m *Main) mountResources(srv *dfhttp.Server) {
	srv.MountUploads(dfhttp.UploadDeps{Intake: m.Intake})
	srv.MountFiles(dfhttp.FilesDeps{Files: m.Files, Blobs: m.Blobs, Intake: m.Intake})
	srv.MountOwnership(dfhttp.OwnershipDeps{Files: m.Files})
	pipelines := postgres.NewPipelineService(m.DB)
	srv.MountPipelines(dfhttp.PipelinesDeps{Pipelines: pipelines})
	srv.MountRouting(dfhttp.RoutingDeps{Rules: postgres.NewRoutingService(m.DB), Pipelines: pipelines})
	srv.MountQueue(dfhttp.QueueDeps{Queue: pipeline.NewInspector(m.Brokers, m.Runs, docflow.StandardSteps)})
	srv.MountClassification(dfhttp.ClassificationDeps{Rules: postgres.NewClassificationService(m.DB)})
	srv.MountEmbeddings(dfhttp.EmbeddingsDeps{Files: m.Files, Queue: steps.NewEmbeddingRuns(postgres.NewEmbeddingStore(m.DB))})
	srv.MountSearch(dfhttp.SearchDeps{Index: m.Index, Store: m.SearchStore})
}

// Wait blocks until ctx is done or the HTTP server fails.
func (m *Main) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.serveErr:
		return err
	}
}

func (m *Main) pingKafka(ctx context.Context) error {
	var d net.Dialer
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

func redactURL(u string) string {
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

func printSettings(w io.Writer) {
	defs := docflow.Catalogue()
	sort.SliceStable(defs, func(i, j int) bool { return defs[i].Category < defs[j].Category })
	cat := ""
	for _, d := range defs {
		if d.Category != cat {
			cat = d.Category
			fmt.Fprintf(w, "\n%s\n", cat)
		}
		def := d.Default
		if def == "" {
			def = "(empty)"
		}
		flags := ""
		if d.Sensitive {
			flags += " sensitive"
		}
		if d.RestartRequired {
			flags += " restart"
		}
		fmt.Fprintf(w, "  %-36s %s\n      default: %s  type: %s%s\n", d.Key, d.Description, def, d.Type, flags)
	}
}

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: docflow migrate\n\nCreates the database named in DATABASE_URL if it is missing and applies\npending migrations (safe when several processes run it at once).\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	env := newEnvSettings(os.Getenv)
	if err := env.validate("DATABASE_URL"); err != nil {
		return err
	}
	db, err := postgres.Open(ctx, env.Get("DATABASE_URL"), 2)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintln(stdout, "migrations applied to", redactURL(env.Get("DATABASE_URL")))
	return nil
}

func runSweepBlobs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sweep-blobs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: docflow sweep-blobs

Removes now the stored files under WORKDIR/blobs that no record references
and that have not been stored again for BLOB_SWEEP_MIN_AGE, as serve, api
and worker do every BLOB_SWEEP_INTERVAL. Safe while docflow runs; fails when
another process is sweeping.
`)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	m := &Main{Role: "sweep-blobs", Getenv: os.Getenv, Stdout: stdout, Stderr: stderr}
	defer m.Close(context.Background()) //nolint:errcheck
	if _, err := m.openStore(ctx, 4); err != nil {
		return err
	}
	// The sweep writes nothing: no flush to set up.
	blobs, err := blob.Open(filepath.Join(m.Workdir, "blobs"), blob.Options{NoSync: true})
	if err != nil {
		return fmt.Errorf("open blob store: %w", err)
	}
	defer blobs.Close()
	st, ran, err := sweepBlobs(ctx, blobs, postgres.NewFileService(m.DB), m.Settings, m.Log)
	if err != nil {
		return err
	}
	if !ran {
		return errors.New("another docflow process is sweeping the blob store; try again later")
	}
	fmt.Fprintf(stdout, "%d blobs examined, %d old enough to check, %d removed (%d bytes freed), %d could not be removed\n",
		st.Examined, st.Old, st.Removed, st.Bytes, st.Failed)
	return nil
}

func runBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port := fs.Int("port", 9092, "port to listen on at 127.0.0.1")
	dataDir := fs.String("data", "", "data directory (default WORKDIR/broker)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: docflow broker [flags]\n\nRuns the embedded Kafka-protocol broker alone, for several docflow processes on\none machine: set KAFKA_BROKERS=127.0.0.1:<port> for `docflow api` and `docflow worker`.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	env := newEnvSettings(os.Getenv)
	if err := env.validate("LOG_LEVEL", "LOG_FORMAT", "WORKDIR"); err != nil {
		return err
	}
	log := newLogger(env.Get("LOG_LEVEL"), env.Get("LOG_FORMAT"), stderr)
	dir := *dataDir
	if dir == "" {
		dir = filepath.Join(env.Get("WORKDIR"), "broker")
	}
	b := streams.NewBroker(streams.BrokerConfig{DataDir: dir, Port: *port, Log: log})
	if err := b.Start(); err != nil {
		return fmt.Errorf("start broker: %w", err)
	}
	defer b.Close()
	fmt.Fprintln(stdout, strings.Join(b.Addrs(), ","))
	log.Info().Strs("addrs", b.Addrs()).Str("data", dir).Msg("broker running; Ctrl-C to stop")
	<-ctx.Done()
	log.Info().Msg("broker stopping")
	return nil
}
