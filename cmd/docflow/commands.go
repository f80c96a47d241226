package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/app"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
)

// Main is one docflow process of a role (serve, api, worker): a thin layer
// over app.Build, which builds every dependency once, and App.Close, which
// releases them in reverse order.
type Main struct {
	Role   string // serve, api, worker
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer

	Log zerolog.Logger
	App *app.App
}

// Run builds the process for its role and starts serving.
func (m *Main) Run(ctx context.Context) error {
	if m.Getenv == nil {
		m.Getenv = os.Getenv
	}
	m.Log = app.Logger(m.Getenv, m.Stderr)
	a, err := app.Build(ctx, app.Config{Role: m.Role, Getenv: m.Getenv, Log: &m.Log, Stderr: m.Stderr, Version: Version})
	if err != nil {
		return err
	}
	m.App = a
	return nil
}

// Wait blocks until ctx is done or the HTTP server fails.
func (m *Main) Wait(ctx context.Context) error { return m.App.Wait(ctx) }

// Close releases everything Run built, newest first.
func (m *Main) Close(ctx context.Context) error {
	err := m.App.Close(ctx)
	m.App = nil
	return err
}

// shutdownTimeout bounds a service's shutdown after SIGTERM: the HTTP
// server drains, the workers finish and commit, then what is left is
// abandoned (a step's lease lapses and another worker takes it). An
// orchestrator's grace period must exceed it (deploy/k8s, checked by
// deploy/k8s_test.go).
const shutdownTimeout = 30 * time.Second

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
			if k == docflow.ListenAddr.Key() {
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
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
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
	if err := app.ValidateEnv(os.Getenv, docflow.DatabaseURL.Key()); err != nil {
		return err
	}
	env := app.Env(os.Getenv)
	db, err := postgres.Open(ctx, docflow.DatabaseURL.Get(env), 2)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintln(stdout, "migrations applied to", app.RedactURL(docflow.DatabaseURL.Get(env)))
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
	m, err := app.OpenStore(ctx, app.Config{Role: "sweep-blobs", Getenv: os.Getenv, Stderr: stderr, Version: Version}, 4)
	if err != nil {
		return err
	}
	defer m.Close(context.Background()) //nolint:errcheck
	// The sweep writes nothing: no flush to set up.
	blobs, err := blob.Open(filepath.Join(m.Workdir, "blobs"), blob.Options{NoSync: true})
	if err != nil {
		return fmt.Errorf("open blob store: %w", err)
	}
	defer blobs.Close()
	st, ran, err := app.SweepBlobs(ctx, blobs, postgres.NewFileStore(m.DB), m.Settings, m.Log)
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
		fmt.Fprint(stderr, "Usage: docflow broker [flags]\n\nRuns the embedded Kafka-protocol broker alone, for several docflow processes on\none machine: set KAFKA_BROKERS=127.0.0.1:<port> for `docflow api` and `docflow worker`.\nIt keeps each message BROKER_RETENTION (default 168h).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := app.ValidateEnv(os.Getenv, docflow.LogLevel.Key(), docflow.LogFormat.Key(), docflow.Workdir.Key(), docflow.BrokerRetention.Key()); err != nil {
		return err
	}
	log := app.Logger(os.Getenv, stderr)
	dir := *dataDir
	if dir == "" {
		dir = filepath.Join(docflow.Workdir.Get(app.Env(os.Getenv)), "broker")
	}
	b := streams.NewBroker(streams.BrokerConfig{DataDir: dir, Port: *port, Retention: docflow.BrokerRetention.Get(app.Env(os.Getenv)), Log: log})
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
