package delivery

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/integrations/webhook"
	"docflow/storage/postgres"
	"docflow/streams"
	"docflow/streams/streamstest"
)

type env struct {
	t        *testing.T
	db       *postgres.DB
	store    *postgres.WebhookStore
	outbox   *postgres.Outbox
	settings *postgres.SettingsStore
	brokers  []string
	producer *streams.Producer
	log      zerolog.Logger
}

func testLog() zerolog.Logger {
	if os.Getenv("TEST_LOG") != "" {
		return zerolog.New(zerolog.NewConsoleWriter()).Level(zerolog.DebugLevel)
	}
	return zerolog.New(io.Discard)
}

// newEnv builds PostgreSQL, the embedded broker, the outbox relay and the
// settings; 127.0.0.1 is an allowed webhook host (the receivers are local).
func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "delivery")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	e := &env{t: t, db: db, outbox: postgres.NewOutbox(db), log: testLog()}
	c, err := postgres.NewCipher(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
	e.settings, err = postgres.NewSettingsStore(ctx, db, c, func(k string) string { return vars[k] }, e.log)
	if err != nil {
		t.Fatal(err)
	}
	e.store = postgres.NewWebhookStore(db, c, AttemptMessage)
	b := streamstest.StartBroker(t, 2, streams.TopicEvents)
	b.CreateTopics(t, 1, streams.TopicDLQ)
	e.brokers, e.producer = b.Brokers, b.Producer
	b.StartRelay(t, e.outbox, 50*time.Millisecond)
	return e
}

// start runs a delivery service; adjust changes its configuration. The
// returned stop closes it (also at the end of the test).
func (e *env) start(adjust func(*Config)) (*Service, func(time.Duration)) {
	e.t.Helper()
	ae, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	cfg := Config{Actors: ae, Brokers: e.brokers, Store: e.store, Settings: e.settings,
		Senders: map[string]Sender{docflow.SubscriberWebhook: webhook.NewSender(e.settings)}, Publisher: e.producer,
		Log: e.log, RetryDelays: []time.Duration{100 * time.Millisecond, 150 * time.Millisecond, 200 * time.Millisecond},
		Timeout: 2 * time.Second, Partitions: 2, Consumer: streamstest.FastGroup}
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

// webhook stores an active webhook for events at url.
func (e *env) webhook(url, secret string, events ...string) *docflow.Webhook {
	e.t.Helper()
	w := &docflow.Webhook{URL: url, Secret: secret, Events: events, IsActive: true}
	if err := e.store.CreateWebhook(context.Background(), w); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// emit writes a document.uploaded event of file id to the outbox and
// returns its id.
func (e *env) emit(id int64) string {
	e.t.Helper()
	owner := "alice"
	title := "Invoice"
	f := &docflow.File{ID: id, OriginalFilename: "scan.pdf", Status: "pending", OwnerID: &owner, DocumentTitle: &title}
	m, err := streams.DocumentUploaded(f, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.outbox.Enqueue(context.Background(), m); err != nil {
		e.t.Fatal(err)
	}
	_, ev, err := streams.Decode[streams.Event](m.Payload)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev.ID
}

// deliveries returns webhook w's delivery log.
func (e *env) deliveries(w *docflow.Webhook) []docflow.DeliveryLogEntry {
	e.t.Helper()
	list, _, err := e.store.ListDeliveries(context.Background(), w.ID, 1, 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return list
}

// request is what a receiver got.
type request struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is an httptest server that records requests and answers with
// answer(n) for the n-th (from 1).
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, request{Header: r.Header.Clone(), Body: b, At: time.Now()})
		n := len(rc.reqs)
		rc.mu.Unlock()
		answer(n, w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.reqs...)
}

func status(code int) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// failsOnce answers 503 to the first request and 200 to the others.
func failsOnce(n int, w http.ResponseWriter, _ *http.Request) {
	if n == 1 {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func decodeBody(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return m
}
