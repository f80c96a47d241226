// Package apptest is the test twin of internal/app: app.Build on a
// throwaway PostgreSQL database (postgres.OpenTestDB), an embedded broker
// that accepts short consumer-group timings, a scratch WORKDIR, a loopback
// port and short timings. The end-to-end stack, the tests of the whole
// HTTP API and docflow-bench build on it instead of wiring their own.
package apptest

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow/actors/alerts"
	"docflow/actors/delivery"
	"docflow/actors/destinations"
	"docflow/actors/indexer"
	"docflow/actors/pipeline"
	"docflow/actors/sources"
	dfhttp "docflow/http"
	"docflow/intake"
	"docflow/internal/app"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// Options shape an App. The zero value is a serve process with the test
// timings.
type Options struct {
	// Role is serve (default), api or worker.
	Role string
	// Env are environment settings: the settings service reads them below
	// database values and above the defaults. SetEnv changes them later.
	// The twin sets SESSION_SECRET, WORKDIR, KAFKA_BROKERS, LISTEN_ADDR,
	// KAFKA_PARTITIONS (4) and RATE_LIMITING_ENABLED (false) unless Env
	// does.
	Env map[string]string
	// Log is the process's logger (default quiet; TEST_LOG=1 logs to the
	// console).
	Log *zerolog.Logger
	// ProductionTimings keeps the consumers' production polling and
	// heartbeat intervals (benchmarks) instead of the quick test ones.
	ProductionTimings bool
	// DB is an open, migrated database to use instead of a throwaway one;
	// Close leaves it open.
	DB *postgres.DB
	// Workdir is the WORKDIR (default a scratch directory that Close
	// removes).
	Workdir string
	// NoRelay leaves the outbox unpublished (app.Config.NoRelay).
	NoRelay bool
	// BrokerOnDisk keeps the embedded broker's log in WORKDIR/broker, as
	// serve's broker does, rather than in the process's memory (for
	// benchmarks of the process's memory: a worker holds no log).
	BrokerOnDisk bool
	// These adjust a component's configuration after the twin's short
	// timings (app.Config).
	Engine  func(*pipeline.Config)
	Relay   func(*streams.RelayConfig)
	Intake  func(*intake.Config)
	Indexer func(*indexer.Config)
	Blobs   func(*blob.Options)
	// Now is the clock of the HTTP API and the reset tokens (app.Config.Now).
	Now func() time.Time
	// Delivery adjusts the event delivery (app.Config.Delivery).
	Delivery func(*delivery.Config)
	// Destinations adjusts the delivery to storage destinations after the
	// twin's quick timings (retries after 100, 200 and 300 ms).
	Destinations func(*destinations.Config)
	// Sources adjusts the IMAP sources' supervisor after the twin's quick
	// timings (scans every 200 ms, leases of 3 s, reconnects after 100 ms).
	Sources func(*sources.Config)
	// Alerts adjusts the integration-failure alerts after the twin's
	// quick tick (every 200 ms).
	Alerts func(*alerts.Config)
	// HTTP adjusts the HTTP server's configuration (app.Config.HTTP).
	HTTP func(*dfhttp.Config)
}

// App is a running docflow process built by app.Build, with what the twin
// made for it. Close releases everything.
type App struct {
	*app.App
	// URL is the base URL of the HTTP API (serve and api).
	URL string

	dir     string
	envMu   sync.Mutex
	env     map[string]string
	closers []func()
}

// Start builds and starts an App; Close releases it. ctx is the process's
// context, as for app.Build.
func Start(ctx context.Context, o Options) (a *App, err error) {
	if o.Role == "" {
		o.Role = "serve"
	}
	a = &App{env: map[string]string{
		"SESSION_SECRET":        strings.Repeat("t", 40),
		"KAFKA_PARTITIONS":      "4",
		"RATE_LIMITING_ENABLED": "false",
	}}
	maps.Copy(a.env, o.Env)
	// NOTE: a return with an error has set a to nil by the time this
	// runs; what was made is released through made.
	made := a
	defer func() {
		if err != nil {
			made.Close()
			a = nil
		}
	}()
	log := zerolog.Nop()
	if o.Log != nil {
		log = *o.Log
	} else if os.Getenv("TEST_LOG") != "" {
		log = zerolog.New(zerolog.NewConsoleWriter())
	}

	a.dir = o.Workdir
	if a.dir == "" {
		if a.dir, err = os.MkdirTemp("", "docflow-app-"); err != nil {
			return nil, err
		}
		dir := a.dir
		a.closers = append(a.closers, func() { os.RemoveAll(dir) })
	}
	a.setDefault("WORKDIR", a.dir)

	db := o.DB
	if db == nil {
		var cleanup func()
		if db, cleanup, err = postgres.OpenTestDB(ctx, "app"); err != nil {
			return nil, fmt.Errorf("open test db: %w", err)
		}
		a.closers = append(a.closers, cleanup)
	}

	bcfg := streams.BrokerConfig{MinSessionTimeout: 500 * time.Millisecond, Log: log}
	if o.BrokerOnDisk {
		bcfg.DataDir = filepath.Join(a.dir, "broker")
	}
	broker := streams.NewBroker(bcfg)
	if err := broker.Start(); err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}
	a.closers = append(a.closers, broker.Close)
	a.setDefault("KAFKA_BROKERS", strings.Join(broker.Addrs(), ","))

	var ln net.Listener
	if o.Role != "worker" {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() { ln.Close() })
		a.setDefault("LISTEN_ADDR", ln.Addr().String())
		a.URL = "http://" + ln.Addr().String()
	}

	cfg := app.Config{Role: o.Role, Getenv: a.getenv, Log: &log, Version: "test", DB: db, Listener: ln, NoRelay: o.NoRelay,
		Engine: func(c *pipeline.Config) {
			c.RetryDelays = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}
			c.StepTimeout = 3 * time.Minute
			c.Partitions = 4
			c.LeaseTTL = 10 * time.Second
			c.Heartbeat = 500 * time.Millisecond
			if !o.ProductionTimings {
				c.Consumer = streamstest.FastGroup
			}
			if o.Engine != nil {
				o.Engine(c)
			}
		},
		Relay: func(c *streams.RelayConfig) {
			c.PollInterval = 200 * time.Millisecond
			if o.Relay != nil {
				o.Relay(c)
			}
		},
		Intake: func(c *intake.Config) {
			// A busy test machine is no reason to refuse uploads.
			c.LoadPerCPU = func() float64 { return 0 }
			if o.Intake != nil {
				o.Intake(c)
			}
		},
		Indexer: func(c *indexer.Config) {
			if !o.ProductionTimings {
				c.Consumer = streamstest.FastGroup
			}
			if o.Indexer != nil {
				o.Indexer(c)
			}
		},
		Blobs: o.Blobs,
		Now:   o.Now,
		HTTP:  o.HTTP,
		Delivery: func(c *delivery.Config) {
			if !o.ProductionTimings {
				c.Consumer = streamstest.FastGroup
			}
			if o.Delivery != nil {
				o.Delivery(c)
			}
		},
		Destinations: func(c *destinations.Config) {
			if !o.ProductionTimings {
				c.Consumer = streamstest.FastGroup
				c.RetryDelays = []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
				c.InitialBackoff, c.MaxBackoff = 50*time.Millisecond, time.Second
			}
			if o.Destinations != nil {
				o.Destinations(c)
			}
		},
		Sources: func(c *sources.Config) {
			if !o.ProductionTimings {
				c.Scan, c.LeaseTTL = 200*time.Millisecond, 3*time.Second
				c.InitialBackoff, c.MaxBackoff = 100*time.Millisecond, 2*time.Second
			}
			if o.Sources != nil {
				o.Sources(c)
			}
		},
		Alerts: func(c *alerts.Config) {
			if !o.ProductionTimings {
				c.Tick = 200 * time.Millisecond
			}
			if o.Alerts != nil {
				o.Alerts(c)
			}
		},
	}
	built, err := app.Build(ctx, cfg)
	if err != nil {
		return nil, err
	}
	a.App = built
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		built.Close(ctx) //nolint:errcheck // a test's cleanup
	})
	return a, nil
}

// New starts an App for a test and closes it when the test ends.
func New(t testing.TB, o Options) *App {
	t.Helper()
	// NOTE: the context lives as long as the process: the watch folders
	// and the blob sweep run until it ends. Build bounds its own waits.
	a, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("start docflow %s: %v", o.Role, err)
	}
	t.Cleanup(a.Close)
	return a
}

func (a *App) getenv(k string) string {
	a.envMu.Lock()
	defer a.envMu.Unlock()
	return a.env[k]
}

func (a *App) setDefault(k, v string) {
	a.envMu.Lock()
	defer a.envMu.Unlock()
	if _, ok := a.env[k]; !ok {
		a.env[k] = v
	}
}

// SetEnv changes an environment setting; the process reads it where it
// next asks (steps on their next run, the HTTP API on its next request).
func (a *App) SetEnv(k, v string) {
	a.envMu.Lock()
	defer a.envMu.Unlock()
	a.env[k] = v
}

// Dir is the process's WORKDIR.
func (a *App) Dir() string { return a.dir }

// Close stops the process and removes what the twin made, newest first.
// It is safe to call more than once.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}
