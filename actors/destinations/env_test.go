package destinations

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"
	"golang.org/x/net/webdav"

	"docflow"
	"docflow/integrations/local"
	dav "docflow/integrations/webdav"
	"docflow/internal/netguard"
	"docflow/internal/testsupport"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
	"docflow/streams/streamstest"
)

type env struct {
	t        *testing.T
	ctx      context.Context
	db       *postgres.DB
	store    *postgres.DestinationStore
	integ    *postgres.IntegrationStore
	settings *postgres.SettingsStore
	blobs    *blob.Local
	brokers  []string
	producer *streams.Producer
	log      zerolog.Logger
	// localRoot is LOCAL_DESTINATION_DIR of the LOCAL integrations.
	localRoot string
}

func testLog() zerolog.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return zerolog.New(zerolog.NewConsoleWriter()).Level(zerolog.DebugLevel)
	}
	return zerolog.New(io.Discard)
}

// newEnv builds PostgreSQL, a blob store, the embedded broker (two
// partitions) and the outbox relay.
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "destinations")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	e := &env{t: t, ctx: ctx, db: db, log: testLog(), localRoot: t.TempDir()}
	c, err := postgres.NewCipher(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}
	if e.settings, err = postgres.NewSettingsStore(ctx, db, c, func(k string) string { return vars[k] }, e.log); err != nil {
		t.Fatal(err)
	}
	e.store = postgres.NewDestinationStore(db, c, TaskMessage)
	e.integ = postgres.NewIntegrationStore(db, c)
	if e.blobs, err = blob.Open(t.TempDir(), blob.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.blobs.Close() })
	b := streamstest.StartBroker(t, 2, Topic)
	b.CreateTopics(t, 1, streams.TopicDLQ)
	e.brokers, e.producer = b.Brokers, b.Producer
	b.StartRelay(t, postgres.NewOutbox(db), 50*time.Millisecond)
	return e
}

var loopback = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}

// factories are the clients of the tests: LOCAL under e.localRoot,
// WEBDAV through the loopback-allowing dialer.
func (e *env) factories() docflow.DestinationFactories {
	return docflow.DestinationFactories{
		docflow.IntegrationLocal: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return local.NewClient(func() string { return e.localRoot }, in)
		},
		docflow.IntegrationWebDAV: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			return dav.NewIntegration(in, loopback)
		},
	}
}

// start runs a service on an actor engine of its own (a process of its
// own, as far as the destinations know); the returned stop closes it
// within grace (also at the end of the test).
func (e *env) start(adjust func(*Config)) (*Service, func(time.Duration)) {
	e.t.Helper()
	ae, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := Config{Actors: ae, Brokers: e.brokers, Store: e.store, Blobs: e.blobs, Factories: e.factories(),
		Settings: e.settings, Publisher: e.producer, Log: e.log, Partitions: 2, Consumer: streamstest.FastGroup,
		RetryDelays:    []time.Duration{150 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond},
		InitialBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Timeout: 30 * time.Second,
		ClaimLease: 2 * time.Second}
	if adjust != nil {
		adjust(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		e.t.Fatal(err)
	}
	var once sync.Once
	stop := func(grace time.Duration) {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			s.Close(ctx) //nolint:errcheck // a test's cleanup
		})
	}
	e.t.Cleanup(func() { stop(5 * time.Second) })
	return s, stop
}

// integration stores an active destination of ann's.
func (e *env) integration(typ, name string, config map[string]any, creds map[string]string) *docflow.Integration {
	e.t.Helper()
	in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionDestination, IntegrationType: typ,
		Name: name, Config: config, Credentials: creds, IsActive: true}
	if err := e.integ.CreateIntegration(e.ctx, in, true); err != nil {
		e.t.Fatal(err)
	}
	return in
}

// file stores a completed document of ann's with body as its processed
// PDF.
func (e *env) file(name, title string, body []byte) *docflow.File {
	e.t.Helper()
	info, err := e.blobs.Put(e.ctx, strings.NewReader(string(body)), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	owner := "ann"
	f := &docflow.File{OriginalFilename: name, OwnerID: &owner, ProcessedBlob: info.Key, OriginalBlob: info.Key,
		FileSize: int64(len(body)), MimeType: "application/pdf"}
	if title != "" {
		f.DocumentTitle = &title
	}
	if err := e.db.Pool.QueryRow(e.ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type,
			owner_id, status, original_blob, processed_blob, document_title)
		VALUES ($1, $2, $2, $3, $4, $5, 'completed', $6, $6, $7) RETURNING id, created_at`,
		info.Key, name, f.FileSize, f.MimeType, owner, info.Key, f.DocumentTitle).Scan(&f.ID, &f.CreatedAt); err != nil {
		e.t.Fatal(err)
	}
	return f
}

// enqueue queues f's deliveries for run.
func (e *env) enqueue(f *docflow.File, run string) []docflow.FileDestination {
	e.t.Helper()
	q, err := e.store.EnqueueFileDeliveries(e.ctx, f, "ann", run, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return q
}

// destinations returns f's deliveries by integration id.
func (e *env) destinations(f *docflow.File) map[int64]docflow.FileDestination {
	e.t.Helper()
	ds, err := e.store.FileDestinations(e.ctx, f.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]docflow.FileDestination{}
	for _, d := range ds {
		if d.IntegrationID != nil {
			out[*d.IntegrationID] = d
		}
	}
	return out
}

// waitStatus waits until f's delivery to in has status.
func (e *env) waitStatus(f *docflow.File, in *docflow.Integration, status string, within time.Duration) docflow.FileDestination {
	e.t.Helper()
	var d docflow.FileDestination
	testsupport.WaitFor(e.t, within, "delivery to "+in.Name+" "+status, func() bool {
		d = e.destinations(f)[in.ID]
		return d.Status == status
	})
	return d
}

// logs returns f's processing log lines of send_to_destinations.
func (e *env) logs(f *docflow.File) []string {
	e.t.Helper()
	rows, err := e.db.Pool.Query(e.ctx, `SELECT status || ': ' || message FROM processing_logs
		WHERE file_id = $1 AND step_name = $2 ORDER BY id`, f.ID, docflow.StepSendToDestinations)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// status returns integration in's status and last_error.
func (e *env) status(in *docflow.Integration) (docflow.IntegrationStatus, *string) {
	e.t.Helper()
	got, err := e.integ.GetIntegration(e.ctx, "ann", in.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return got.Status, got.LastError
}

// davServer is an in-process WebDAV server (golang.org/x/net/webdav) on a
// folder, with Basic authentication and a hook before every PUT.
type davServer struct {
	*httptest.Server
	dir  string
	puts atomic.Int64
	// beforePut, when set, runs before the n-th PUT (from 1); true means
	// it answered the request itself.
	beforePut func(n int64, w http.ResponseWriter, r *http.Request) bool
	mu        sync.Mutex
}

func newDAV(t *testing.T) *davServer {
	d := &davServer{dir: t.TempDir()}
	h := &webdav.Handler{FileSystem: webdav.Dir(d.dir), LockSystem: webdav.NewMemLS()}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "u" || p != "p" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPut {
			n := d.puts.Add(1)
			d.mu.Lock()
			hook := d.beforePut
			d.mu.Unlock()
			if hook != nil && hook(n, w, r) {
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *davServer) setHook(h func(n int64, w http.ResponseWriter, r *http.Request) bool) {
	d.mu.Lock()
	d.beforePut = h
	d.mu.Unlock()
}

// files lists the names in folder of the server.
func (d *davServer) files(t *testing.T, folder string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(d.dir, folder))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func (e *env) davIntegration(d *davServer, name, folder, pass string, extra map[string]any) *docflow.Integration {
	config := map[string]any{"url": d.URL, "path": folder}
	for k, v := range extra {
		config[k] = v
	}
	return e.integration(docflow.IntegrationWebDAV, name, config, map[string]string{"username": "u", "password": pass})
}
