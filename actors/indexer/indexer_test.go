package indexer

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/jackc/pgx/v5"
	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
	searchbleve "docflow/storage/search/bleve"
	"docflow/streams"
	"docflow/streams/streamstest"
)

type env struct {
	t        *testing.T
	db       *postgres.DB
	store    *postgres.SearchStore
	settings *postgres.SettingsStore
	index    *searchbleve.Index
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

func newEnv(t *testing.T, vars map[string]string) *env {
	t.Helper()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "indexer")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	e := &env{t: t, db: db, store: postgres.NewSearchStore(db), log: testLog()}
	c, err := postgres.NewCipher(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	e.settings, err = postgres.NewSettingsStore(ctx, db, c, func(k string) string { return vars[k] }, e.log)
	if err != nil {
		t.Fatal(err)
	}
	e.index, err = searchbleve.Open(t.TempDir(), searchbleve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.index.Close() })

	b := streamstest.StartBroker(t, 3, streams.TopicEvents)
	b.CreateTopics(t, 1, streams.TopicDLQ)
	e.brokers, e.producer = b.Brokers, b.Producer
	b.StartRelay(t, postgres.NewOutbox(db), 100*time.Millisecond)
	return e
}

func (e *env) start(index docflow.SearchIndex) *Indexer {
	e.t.Helper()
	ae, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		e.t.Fatal(err)
	}
	x, err := New(Config{Actors: ae, Brokers: e.brokers, Index: index, Store: e.store, Settings: e.settings, DeadLetters: e.producer,
		Log: e.log, FlushInterval: 10 * time.Millisecond, RetryDelay: 20 * time.Millisecond, MaxAttempts: 3, Consumer: streamstest.FastGroup})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		x.Close(ctx)
	})
	return x
}

// file inserts a file row and returns its id.
func (e *env) file(name, status, text, meta string, vec []float32) int64 {
	e.t.Helper()
	ctx := context.Background()
	var id int64
	err := e.db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type,
		status, ocr_text, ai_metadata) VALUES (md5(random()::text), $1, 'x.pdf', 1, 'application/pdf', $2, $3, $4::jsonb) RETURNING id`,
		name, status, text, meta).Scan(&id)
	if err != nil {
		e.t.Fatal(err)
	}
	if vec != nil {
		if err := e.store.PutEmbedding(ctx, &docflow.Embedding{FileID: id, Model: "test", Vector: vec}); err != nil {
			e.t.Fatal(err)
		}
	}
	return id
}

// emit enqueues one event per id through the outbox, with change applied
// in the same transaction.
func (e *env) emit(name string, change string, ids ...int64) {
	e.t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, e.db.Pool, func(tx pgx.Tx) error {
		for _, id := range ids {
			if change != "" {
				if _, err := tx.Exec(ctx, change, id); err != nil {
					return err
				}
			}
			m, err := streams.FileEvent(name, id, nil, time.Now())
			if err != nil {
				return err
			}
			if err := postgres.Enqueue(ctx, tx, m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) hits(q string) []int64 {
	e.t.Helper()
	res, err := e.index.Search(context.Background(), docflow.SearchQuery{Text: q, PerPage: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []int64
	for _, h := range res.Hits {
		out = append(out, h.FileID)
	}
	return out
}

func (e *env) pairCount() int {
	e.t.Helper()
	var n int
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM similarity_pairs`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func TestIndexerFollowsEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	x := e.start(e.index)

	a := e.file("a.pdf", "completed", "quarterly invoice from acme", `{"title":"Acme invoice","tags":["tax"]}`, []float32{1, 0.1, 0})
	b := e.file("b.pdf", "completed", "another invoice", `{}`, []float32{1, 0.12, 0.01})
	c := e.file("c.pdf", "completed", "holiday photos", `{}`, []float32{0, 0, 1})
	pending := e.file("d.pdf", "processing", "invoice draft", `{}`, nil)
	e.emit(docflow.EventDocumentProcessed, "", a, b, c, pending)
	testsupport.WaitFor(t, time.Minute, "three documents indexed", func() bool { return len(e.hits("invoice")) == 2 && len(e.hits("holiday")) == 1 })
	if hits := e.hits("draft"); len(hits) != 0 {
		t.Fatalf("an unfinished file was indexed: %v", hits)
	}
	// a and b are near each other (cosine ≈ 0.9998); c is far from both.
	testsupport.WaitFor(t, time.Minute, "the pair of a and b", func() bool { return e.pairCount() == 1 })
	pairs, _, err := e.store.FindSimilarityPairs(context.Background(), docflow.SimilarityPairFilter{MinScore: 0.5})
	if err != nil || len(pairs) != 1 || pairs[0].FileA.FileID != a || pairs[0].FileB.FileID != b || pairs[0].Score < 0.99 {
		t.Fatalf("pairs %+v %v", pairs, err)
	}

	// A metadata edit is re-indexed.
	e.emit(streams.EventFileUpdated, `UPDATE files SET document_title='Renamed zebra' WHERE id=$1`, c)
	testsupport.WaitFor(t, time.Minute, "the new title", func() bool { return len(e.hits("zebra")) == 1 })

	// A deleted file leaves the index; its pairs go with the row.
	e.emit(streams.EventFileDeleted, `DELETE FROM files WHERE id=$1`, a)
	testsupport.WaitFor(t, time.Minute, "the deleted document gone", func() bool { return len(e.hits("acme")) == 0 })
	if n := e.pairCount(); n != 0 {
		t.Fatalf("%d pairs left", n)
	}
	// Other events on the topic are acknowledged and ignored.
	e.emit(docflow.EventDocumentUploaded, "", b)
	e.emit(docflow.EventDocumentProcessed, "", b) // a duplicate delivery is harmless
	testsupport.WaitFor(t, time.Minute, "all events acknowledged", func() bool { return x.consumer.InFlight() == 0 && x.Indexed() >= 4 })
	if x.DeadLettered() != 0 {
		t.Fatalf("%d dead letters", x.DeadLettered())
	}
}

// flaky fails whole Index calls while down is set and refuses the ids in
// refuse on every call.
type flaky struct {
	docflow.SearchIndex
	down   atomic.Bool
	calls  atomic.Int64
	mu     sync.Mutex
	refuse map[int64]bool
}

func (f *flaky) Index(ctx context.Context, docs []*docflow.SearchDocument) (map[int64]error, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return nil, errors.New("connection refused")
	}
	f.mu.Lock()
	var keep []*docflow.SearchDocument
	failed := map[int64]error{}
	for _, d := range docs {
		if f.refuse[d.FileID] {
			failed[d.FileID] = errors.New("mapper_parsing_exception")
		} else {
			keep = append(keep, d)
		}
	}
	f.mu.Unlock()
	got, err := f.SearchIndex.Index(ctx, keep)
	for id, e := range got {
		failed[id] = e
	}
	return failed, err
}

func TestIndexerRetriesAndDeadLetters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	fl := &flaky{SearchIndex: e.index, refuse: map[int64]bool{}}
	fl.down.Store(true)
	x := e.start(fl)

	good := e.file("good.pdf", "completed", "walrus report", `{}`, nil)
	bad := e.file("bad.pdf", "completed", "walrus appendix", `{}`, nil)
	fl.mu.Lock()
	fl.refuse[bad] = true
	fl.mu.Unlock()
	e.emit(docflow.EventDocumentProcessed, "", good, bad)

	// While the index is down nothing is acknowledged.
	testsupport.WaitFor(t, time.Minute, "retries against a down index", func() bool { return fl.calls.Load() >= 3 })
	if n := x.consumer.InFlight(); n != 2 {
		t.Fatalf("%d events in flight while the index is down, want 2", n)
	}
	fl.down.Store(false)
	testsupport.WaitFor(t, time.Minute, "the good document", func() bool { return len(e.hits("walrus")) == 1 })
	testsupport.WaitFor(t, time.Minute, "the refused document dead-lettered", func() bool { return x.DeadLettered() == 1 && x.consumer.InFlight() == 0 })

	// The dead letter carries the reason.
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: e.brokers, Topic: streams.TopicDLQ, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := r.FetchMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if reason := streams.HeaderValue(m, streams.HeaderReason); !strings.Contains(reason, "mapper_parsing_exception") {
		t.Fatalf("dead letter reason %q", reason)
	}
}

func TestIndexerDeadLettersPoison(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	x := e.start(e.index)
	ctx := context.Background()
	bad, _ := streams.Encode("evt_1", time.Now(), streams.Event(docflow.Event{ID: "evt_1", Name: docflow.EventDocumentProcessed,
		Timestamp: time.Now(), Data: map[string]any{"file_id": "not a number"}}))
	if err := e.producer.Publish(ctx, streams.Message{Topic: streams.TopicEvents, Value: bad},
		streams.Message{Topic: streams.TopicEvents, Value: []byte("{not json")}); err != nil {
		t.Fatal(err)
	}
	id := e.file("after.pdf", "completed", "narwhal", `{}`, nil)
	e.emit(docflow.EventDocumentProcessed, "", id)
	testsupport.WaitFor(t, time.Minute, "the event after the poison", func() bool { return len(e.hits("narwhal")) == 1 })
	testsupport.WaitFor(t, time.Minute, "nothing in flight", func() bool { return x.consumer.InFlight() == 0 })
}

func TestFileEventParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want int64
		ok   bool
	}{{float64(7), 7, true}, {"12", 12, true}, {float64(1.5), 0, false}, {float64(-1), 0, false}, {nil, 0, false}, {true, 0, false}} {
		got, err := dataFileID(tc.v)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("dataFileID(%v) = %d, %v", tc.v, got, err)
		}
	}
}

func TestReindex(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ctx := context.Background()
	var ids []int64
	for i := range 25 {
		status := "completed"
		if i%5 == 4 {
			status = "failed"
		}
		vec := []float32{1, float32(i) / 1000, 0}
		ids = append(ids, e.file("f.pdf", status, "otter number", `{}`, vec))
	}
	// The index holds stale documents: of a file deleted since, of one
	// beyond the last file, and of the failed ones.
	stale := []*docflow.SearchDocument{{FileID: ids[3], OCRText: "otter"}, {FileID: ids[24] + 5, OCRText: "otter"}, {FileID: ids[4], OCRText: "otter"}}
	if _, err := e.index.Index(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Pool.Exec(ctx, `DELETE FROM files WHERE id=$1`, ids[3]); err != nil {
		t.Fatal(err)
	}
	// The sequence has moved past the stale id beyond the end.
	if _, err := e.db.Pool.Exec(ctx, `SELECT setval('files_id_seq', $1)`, ids[24]+10); err != nil {
		t.Fatal(err)
	}
	var progress int
	st, err := Reindex(ctx, e.store, e.index, ReindexOptions{BatchSize: 7, Pairs: true, Settings: e.settings, Log: e.log,
		Progress: func(ReindexStats) { progress++ }})
	if err != nil {
		t.Fatal(err)
	}
	// 25 files: 5 failed, 1 deleted (a completed one) → 19 documents.
	if st.Indexed != 19 || st.Failed != 0 || progress != 4 || st.Pairs != 19 {
		t.Fatalf("stats %+v, progress %d", st, progress)
	}
	if n := len(e.hits("otter")); n != 19 {
		t.Fatalf("%d documents found, want 19", n)
	}
	if e.pairCount() == 0 {
		t.Fatal("no pairs recomputed")
	}
	n, _ := e.index.DocCount()
	if n != 19 {
		t.Fatalf("index holds %d documents", n)
	}
}

func TestIndexerFallsBackToTextOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	x := e.start(e.index)
	first := e.file("first.pdf", "completed", "kestrel one", `{}`, []float32{1, 0, 0})
	e.emit(docflow.EventDocumentProcessed, "", first)
	testsupport.WaitFor(t, time.Minute, "the first document", func() bool { return len(e.hits("kestrel")) == 1 })
	// An embedding of another model's size: the index refuses it, and on the
	// last attempt the text is indexed alone.
	odd := e.file("odd.pdf", "completed", "kestrel two", `{}`, []float32{1, 0})
	e.emit(docflow.EventDocumentProcessed, "", odd)
	testsupport.WaitFor(t, time.Minute, "the odd document, text only", func() bool { return len(e.hits("kestrel")) == 2 })
	testsupport.WaitFor(t, time.Minute, "nothing in flight", func() bool { return x.consumer.InFlight() == 0 })
	if x.DeadLettered() != 0 || e.index.EmbeddingCount() != 1 {
		t.Fatalf("dead letters %d, embeddings %d", x.DeadLettered(), e.index.EmbeddingCount())
	}
}

// The indexer is an actor of the engine it is given, gone after Close.
func TestIndexerRunsOnAnActor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	ae, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	x, err := New(Config{Actors: ae, Brokers: e.brokers, Index: e.index, Store: e.store, Settings: e.settings,
		DeadLetters: e.producer, Log: e.log, Consumer: streamstest.FastGroup})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	if ae.Registry.GetPID("indexer", DefaultGroupID) == nil {
		t.Fatal("no indexer actor")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := x.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ae.Registry.GetPID("indexer", DefaultGroupID) != nil {
		t.Fatal("indexer actor still registered after Close")
	}
	if _, err := New(Config{Brokers: e.brokers, Index: e.index, Store: e.store, Settings: e.settings, DeadLetters: e.producer}); err == nil {
		t.Fatal("a configuration without an actor engine was accepted")
	}
}
