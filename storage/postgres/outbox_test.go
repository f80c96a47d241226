package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/segmentio/kafka-go"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// The outbox against the real thing: this package's Outbox under
// streams.Relay, publishing to the embedded broker.

func openOutbox(t testing.TB) *postgres.DB {
	t.Helper()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), "outbox")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return db
}

func enqueueTx(t testing.TB, db *postgres.DB, msgs ...docflow.OutboxMessage) {
	t.Helper()
	if err := postgres.NewOutbox(db).Enqueue(context.Background(), msgs...); err != nil {
		t.Fatalf("enqueue: %v", err)
	}
}

func startRelay(t testing.TB, store streams.OutboxStore, pub streams.Publisher, tweak func(*streams.RelayConfig)) *streams.Relay {
	t.Helper()
	cfg := streams.RelayConfig{Store: store, Publisher: pub, PollInterval: 200 * time.Millisecond, Log: streamstest.Log(t)}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := streams.NewRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func unsent(t testing.TB, db *postgres.DB, topic string) int {
	t.Helper()
	var n int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE topic = $1 AND sent_at IS NULL`, topic).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkKeyOrder asserts that, per key, values "key:seq" arrive with seq
// increasing, and returns how many distinct values arrived.
func checkKeyOrder(t *testing.T, msgs []streams.Message) int {
	t.Helper()
	last := map[string]int{}
	distinct := map[string]bool{}
	for _, m := range msgs {
		k, seqS, _ := strings.Cut(string(m.Value), ":")
		if k != string(m.Key) {
			t.Fatalf("value %q under key %q", m.Value, m.Key)
		}
		seq, _ := strconv.Atoi(seqS)
		if prev, ok := last[k]; ok && seq <= prev {
			t.Fatalf("key %s: %d arrived after %d", k, seq, prev)
		}
		last[k] = seq
		distinct[string(m.Value)] = true
	}
	return len(distinct)
}

const relayTopic = "outbox.test"

// TestOutboxOrderPerKey commits rows in many transactions while the relay
// runs: every row is published once, in order per key.
func TestOutboxOrderPerKey(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	const parts, keys, perKey = 4, 20, 100
	sb := streamstest.StartBroker(t, parts, relayTopic)
	brokers, p := sb.Brokers, sb.Producer
	r := startRelay(t, postgres.NewOutbox(db), p, func(c *streams.RelayConfig) { c.BatchSize = 64 })

	// Each writer owns some keys and commits their rows in sequence, 1 to 5
	// rows per transaction.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; seq < perKey; {
				n := 1 + seq%5
				var msgs []docflow.OutboxMessage
				for i := 0; i < n && seq+i < perKey; i++ {
					for k := w; k < keys; k += 4 {
						key := "f" + strconv.Itoa(k)
						msgs = append(msgs, docflow.OutboxMessage{Topic: relayTopic, Key: key, Payload: fmt.Appendf(nil, "%s:%d", key, seq+i)})
					}
				}
				seq += n
				if err := pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
					return postgres.Enqueue(context.Background(), tx, msgs...)
				}); err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := streamstest.ReadTopic(t, brokers, relayTopic, parts, keys*perKey, time.Minute)
	if len(got) != keys*perKey {
		t.Fatalf("published %d messages, want %d", len(got), keys*perKey)
	}
	if n := checkKeyOrder(t, got); n != keys*perKey {
		t.Fatalf("distinct %d, want %d", n, keys*perKey)
	}
	testsupport.WaitFor(t, time.Minute, "rows marked sent", func() bool { return unsent(t, db, relayTopic) == 0 })
	if r.Published() != keys*perKey {
		t.Fatalf("relay counted %d", r.Published())
	}
}

// TestOutboxRollback publishes nothing for a rolled-back transaction.
func TestOutboxRollback(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	sb := streamstest.StartBroker(t, 1, relayTopic)
	brokers, p := sb.Brokers, sb.Producer
	startRelay(t, postgres.NewOutbox(db), p, nil)

	errRollback := errors.New("rollback")
	err := pgx.BeginFunc(context.Background(), db.Pool, func(tx pgx.Tx) error {
		if err := postgres.Enqueue(context.Background(), tx, docflow.OutboxMessage{Topic: relayTopic, Key: "1", Payload: []byte("ghost")}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("transaction: %v", err)
	}
	enqueueTx(t, db, docflow.OutboxMessage{Topic: relayTopic, Key: "1", Payload: []byte("real")})
	got := streamstest.ReadTopic(t, brokers, relayTopic, 1, 1, time.Minute)
	if len(got) != 1 || string(got[0].Value) != "real" {
		t.Fatalf("published %d messages, first %q; want only \"real\"", len(got), firstValue(got))
	}
}

func firstValue(ms []streams.Message) string {
	if len(ms) == 0 {
		return ""
	}
	return string(ms[0].Value)
}

// crashAfterPublish is the outbox of a relay that dies after Kafka
// acknowledged a batch but before the rows were marked sent.
type crashAfterPublish struct{ *postgres.Outbox }

func (c crashAfterPublish) RelayDue(ctx context.Context, limit int, skip []int64,
	publish func([]docflow.OutboxRow) ([]int64, error)) (int, int, error) {
	return c.Outbox.RelayDue(ctx, limit, skip, func(rows []docflow.OutboxRow) ([]int64, error) {
		if _, err := publish(rows); err != nil {
			return nil, err
		}
		return nil, errors.New("killed")
	})
}

// TestOutboxCrashBetweenPublishAndMark: a relay that dies after Kafka
// acknowledged but before the rows were marked leaves them unsent; the next
// relay publishes them again (at-least-once, nothing lost).
func TestOutboxCrashBetweenPublishAndMark(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	sb := streamstest.StartBroker(t, 1, relayTopic)
	brokers, p := sb.Brokers, sb.Producer

	var msgs []docflow.OutboxMessage
	for i := range 10 {
		msgs = append(msgs, docflow.OutboxMessage{Topic: relayTopic, Key: "k", Payload: fmt.Appendf(nil, "k:%d", i),
			Headers: map[string]string{"x-attempt": "1"}})
	}
	enqueueTx(t, db, msgs...)

	crashing, err := streams.NewRelay(streams.RelayConfig{Store: crashAfterPublish{postgres.NewOutbox(db)}, Publisher: p, Log: streamstest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crashing.RelayOnce(context.Background()); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("relay: %v", err)
	}
	if n := unsent(t, db, relayTopic); n != 10 {
		t.Fatalf("%d rows unsent after the crash, want 10", n)
	}
	if got := streamstest.ReadTopic(t, brokers, relayTopic, 1, 10, time.Minute); len(got) != 10 {
		t.Fatalf("first publish: %d messages", len(got))
	}

	startRelay(t, postgres.NewOutbox(db), p, nil)
	got := streamstest.ReadTopic(t, brokers, relayTopic, 1, 20, time.Minute)
	if len(got) != 20 {
		t.Fatalf("after restart the topic holds %d messages, want the 10 twice", len(got))
	}
	if streams.HeaderValue(got[15], "x-attempt") != "1" {
		t.Fatalf("headers lost: %v", got[15].Headers)
	}
	testsupport.WaitFor(t, time.Minute, "rows marked sent", func() bool { return unsent(t, db, relayTopic) == 0 })
}

// TestOutboxTwoRelays runs two relays (two workers each) over one backlog:
// no row is published twice and keys stay in order.
func TestOutboxTwoRelays(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	const parts, n = 4, 3000
	sb := streamstest.StartBroker(t, parts, relayTopic)
	brokers, p := sb.Brokers, sb.Producer

	var msgs []docflow.OutboxMessage
	for i := range n {
		key := "f" + strconv.Itoa(i%37)
		msgs = append(msgs, docflow.OutboxMessage{Topic: relayTopic, Key: key, Payload: fmt.Appendf(nil, "%s:%d", key, i)})
		if len(msgs) == 100 {
			enqueueTx(t, db, msgs...)
			msgs = nil
		}
	}
	small := func(c *streams.RelayConfig) { c.BatchSize = 50 }
	r1 := startRelay(t, postgres.NewOutbox(db), p, small)
	r2 := startRelay(t, postgres.NewOutbox(db), p, small)
	got := streamstest.ReadTopic(t, brokers, relayTopic, parts, n, time.Minute)
	if len(got) != n {
		t.Fatalf("published %d messages, want %d exactly", len(got), n)
	}
	if d := checkKeyOrder(t, got); d != n {
		t.Fatalf("distinct %d, want %d", d, n)
	}
	t.Logf("relay 1 published %d, relay 2 %d", r1.Published(), r2.Published())
	if r1.Published() == 0 || r2.Published() == 0 {
		t.Logf("one relay did all the work")
	}
}

// TestOutboxDelayed publishes a row only once its available_at has passed.
func TestOutboxDelayed(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	sb := streamstest.StartBroker(t, 1, relayTopic)
	brokers, p := sb.Brokers, sb.Producer
	startRelay(t, postgres.NewOutbox(db), p, func(c *streams.RelayConfig) { c.PollInterval = 5 * time.Second })

	start := time.Now()
	enqueueTx(t, db, docflow.OutboxMessage{Topic: relayTopic, Key: "1", Payload: []byte("later"), AvailableAt: start.Add(400 * time.Millisecond)})
	got := streamstest.ReadTopic(t, brokers, relayTopic, 1, 1, time.Minute)
	if len(got) != 1 {
		t.Fatal("delayed row never published")
	}
	if d := got[0].Time.Sub(start); d < 350*time.Millisecond || d > 2*time.Second {
		t.Fatalf("published after %v, want about 400ms", d)
	}
}

// TestOutboxCleanup deletes sent rows older than the retention only.
func TestOutboxCleanup(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	ctx := context.Background()
	enqueueTx(t, db,
		docflow.OutboxMessage{Topic: relayTopic, Payload: []byte("old")},
		docflow.OutboxMessage{Topic: relayTopic, Payload: []byte("recent")},
		docflow.OutboxMessage{Topic: relayTopic, Payload: []byte("unsent")})
	if _, err := db.Pool.Exec(ctx, `UPDATE outbox SET sent_at = now() - interval '2 hours' WHERE payload = 'old'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE outbox SET sent_at = now() WHERE payload = 'recent'`); err != nil {
		t.Fatal(err)
	}
	r, err := streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(db), Publisher: nopPublisher{}, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	rows, _ := db.Pool.Query(ctx, `SELECT convert_from(payload, 'UTF8') FROM outbox ORDER BY id`)
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(left, ",") != "recent,unsent" {
		t.Fatalf("left %v", left)
	}
}

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...streams.Message) error { return nil }

// TestOutboxUnknownTopicDoesNotBlock: a row for a topic the broker does not
// have fails alone; rows of other topics (and other keys) flow, and the
// failed row goes out once its topic exists.
func TestOutboxUnknownTopicDoesNotBlock(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	const good, missing = "outbox.good", "outbox.missing"
	sb := streamstest.StartBroker(t, 1, good)
	brokers, p := sb.Brokers, sb.Producer
	startRelay(t, postgres.NewOutbox(db), p, nil)
	enqueueTx(t, db,
		docflow.OutboxMessage{Topic: missing, Key: "1", Payload: []byte("1:0")},
		docflow.OutboxMessage{Topic: good, Key: "1", Payload: []byte("1:0")},
		docflow.OutboxMessage{Topic: missing, Key: "1", Payload: []byte("1:1")})
	for i := 1; i <= 20; i++ {
		enqueueTx(t, db, docflow.OutboxMessage{Topic: good, Key: "1", Payload: fmt.Appendf(nil, "1:%d", i)})
	}
	got := streamstest.ReadTopic(t, brokers, good, 1, 21, time.Minute)
	if len(got) != 21 {
		t.Fatalf("good topic got %d of 21 while another topic failed", len(got))
	}
	checkKeyOrder(t, got)
	if unsent(t, db, missing) != 2 {
		t.Fatal("rows of the missing topic left the outbox")
	}
	streamstest.CreateTopics(t, brokers, 1, missing)
	late := streamstest.ReadTopic(t, brokers, missing, 1, 2, time.Minute)
	if len(late) != 2 || string(late[0].Value) != "1:0" || string(late[1].Value) != "1:1" {
		t.Fatalf("missing topic, once created, got %d messages", len(late))
	}
	testsupport.WaitFor(t, time.Minute, "all marked", func() bool { return unsent(t, db, missing) == 0 })
}

// TestOutboxWriteThrough: rows written quiet by a write-through store are
// published by streams.WriteThrough at once and marked sent, so the relay
// never publishes them; rows it could not publish are left to the relay
// once their grace has passed.
func TestOutboxWriteThrough(t *testing.T) {
	t.Parallel()
	db := openOutbox(t)
	const missing = "outbox.later"
	sb := streamstest.StartBroker(t, 1, relayTopic)
	brokers, p := sb.Brokers, sb.Producer
	ctx := context.Background()
	// The grace is long beside any write-through on a loaded machine (a
	// publish to a missing topic is retried for seconds), so the relay can
	// never take a row the write-through is still publishing; the test
	// ends the grace itself below.
	store := postgres.NewRunStore(db).WithDirectOutbox(time.Hour)
	wt := streams.NewWriteThrough(p, store, streamstest.Log(t))
	r := startRelay(t, postgres.NewOutbox(db), p, nil)

	var fileID int64
	if err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, task_id)
		VALUES ('h', 'a.pdf', 's.pdf', 1, 'application/pdf', 'run-w') RETURNING id`).Scan(&fileID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO runs (id, file_id) VALUES ('run-w', $1)`, fileID); err != nil {
		t.Fatal(err)
	}
	msgs := []docflow.OutboxMessage{
		{Topic: relayTopic, Key: "1", Payload: []byte("1:0")},
		{Topic: missing, Key: "1", Payload: []byte("1:1")},
	}
	w, err := store.StartRun(ctx, "run-w", fileID, nil, []*docflow.PipelineStep{{StepType: "test", Label: "t", Enabled: true}}, "routed", msgs...)
	if err != nil || !w.Recorded || len(w.OutboxIDs) != 2 {
		t.Fatalf("write quiet rows: %+v %v", w, err)
	}
	wt.Send(ctx, msgs, w.OutboxIDs)
	wt.Flush(ctx)
	if n := unsent(t, db, relayTopic); n != 0 {
		t.Fatalf("%d published rows still unsent", n)
	}
	if n := unsent(t, db, missing); n != 1 {
		t.Fatalf("%d rows of the missing topic unsent, want the one the write-through could not publish", n)
	}
	if got := streamstest.ReadTopic(t, brokers, relayTopic, 1, 1, time.Minute); len(got) != 1 {
		t.Fatalf("write-through published %d messages, want 1", len(got))
	}
	streamstest.CreateTopics(t, brokers, 1, missing)
	// The grace passes: the row the write-through left is due now.
	if _, err := db.Pool.Exec(ctx, `UPDATE outbox SET available_at = now() WHERE sent_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	if got := streamstest.ReadTopic(t, brokers, missing, 1, 1, time.Minute); len(got) != 1 || string(got[0].Value) != "1:1" {
		t.Fatalf("the relay took over %d messages, want the failed one", len(got))
	}
	testsupport.WaitFor(t, time.Minute, "the relay's row marked sent", func() bool { return unsent(t, db, missing) == 0 })
	if n := r.Published(); n != 1 {
		t.Fatalf("relay published %d rows, want only the failed one", n)
	}
}

// BenchmarkRelayThroughput measures the outbox relay publishing a backlog
// of b.N rows.
func BenchmarkRelayThroughput(b *testing.B) {
	db := openOutbox(b)
	topic := "bench.relay"
	p := streamstest.StartBroker(b, streams.DefaultPartitions, topic).Producer
	for lo := 0; lo < b.N; lo += 1000 {
		var msgs []docflow.OutboxMessage
		for i := lo; i < min(lo+1000, b.N); i++ {
			msgs = append(msgs, docflow.OutboxMessage{Topic: topic, Key: strconv.Itoa(i % 4096), Payload: make([]byte, 256)})
		}
		enqueueTx(b, db, msgs...)
	}
	b.ResetTimer()
	start := time.Now()
	r, err := streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(db), Publisher: p, Log: streamstest.Log(b)})
	if err != nil {
		b.Fatal(err)
	}
	r.Start()
	defer r.Close()
	for r.Published() < int64(b.N) {
		if time.Since(start) > 2*time.Minute {
			b.Fatal("timeout")
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkOutboxLatency measures one row from its transaction's commit to
// its arrival at a consumer (LISTEN/NOTIFY wake-up, publish, fetch).
func BenchmarkOutboxLatency(b *testing.B) {
	db := openOutbox(b)
	topic := "bench.latency"
	sb := streamstest.StartBroker(b, 1, topic)
	brokers, p := sb.Brokers, sb.Producer
	r, err := streams.NewRelay(streams.RelayConfig{Store: postgres.NewOutbox(db), Publisher: p, Log: streamstest.Log(b)})
	if err != nil {
		b.Fatal(err)
	}
	r.Start()
	defer r.Close()
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 50 * time.Millisecond})
	defer rd.Close()
	ctx := context.Background()
	time.Sleep(100 * time.Millisecond) // listener connected
	b.ResetTimer()
	var total, toKafka time.Duration
	var lat []time.Duration
	for i := range b.N {
		start := time.Now()
		enqueueTx(b, db, docflow.OutboxMessage{Topic: topic, Key: "1", Payload: []byte(strconv.Itoa(i))})
		m, err := rd.FetchMessage(ctx)
		if err != nil || string(m.Value) != strconv.Itoa(i) {
			b.Fatalf("fetch: %v %q", err, m.Value)
		}
		total += time.Since(start)
		toKafka += m.Time.Sub(start)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/row")
	b.ReportMetric(float64(toKafka.Microseconds())/float64(b.N)/1000, "ms-to-kafka/row")
}
