package streams

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// outboxTopic gives each test its own topic, so that rows left by another
// test (the outbox table is shared by the package) never show up.
func outboxTopic(t *testing.T) string {
	topic := "outbox." + strings.ToLower(t.Name()) + "." + randHex(3)
	t.Cleanup(func() { deleteRows(topic) })
	return topic
}

// deleteRows removes a test's rows so that no later relay (on another
// broker) tries to publish them.
func deleteRows(topic string) {
	pool, err := pgxpool.New(context.Background(), testDBURL)
	if err != nil {
		return
	}
	defer pool.Close()
	_, _ = pool.Exec(context.Background(), `DELETE FROM outbox WHERE topic = $1`, topic)
}

func enqueueTx(t *testing.T, pool *pgxpool.Pool, msgs ...OutboxMessage) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		return Enqueue(context.Background(), tx, msgs...)
	})
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
}

func startRelay(t *testing.T, pool *pgxpool.Pool, pub Publisher, tweak func(*RelayConfig)) *Relay {
	t.Helper()
	cfg := RelayConfig{Pool: pool, Publisher: pub, PollInterval: 200 * time.Millisecond, Log: testLog(t)}
	if tweak != nil {
		tweak(&cfg)
	}
	r, err := NewRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

func unsent(t *testing.T, pool *pgxpool.Pool, topic string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM outbox WHERE topic = $1 AND sent_at IS NULL`, topic).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkKeyOrder asserts that, per key, values "key:seq" arrive with seq
// increasing, and returns how many distinct values arrived.
func checkKeyOrder(t *testing.T, msgs []Message) int {
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

// TestOutboxOrderPerKey commits rows in many transactions while the relay
// runs: every row is published once, in order per key.
func TestOutboxOrderPerKey(t *testing.T) {
	pool := testPool(t)
	b := startBroker(t, BrokerConfig{})
	brokers := b.Addrs()
	topic := outboxTopic(t)
	const parts, keys, perKey = 4, 20, 100
	createTopics(t, brokers, parts, topic)
	p := newProducer(t, brokers)
	r := startRelay(t, pool, p, func(c *RelayConfig) { c.BatchSize = 64 })

	// Each writer owns some keys and commits their rows in sequence, 1 to 5
	// rows per transaction.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; seq < perKey; {
				n := 1 + seq%5
				var msgs []OutboxMessage
				for i := 0; i < n && seq+i < perKey; i++ {
					for k := w; k < keys; k += 4 {
						key := "f" + strconv.Itoa(k)
						msgs = append(msgs, OutboxMessage{Topic: topic, Key: key, Payload: fmt.Appendf(nil, "%s:%d", key, seq+i)})
					}
				}
				seq += n
				if err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
					return Enqueue(context.Background(), tx, msgs...)
				}); err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := readTopic(t, brokers, topic, parts, keys*perKey, 30*time.Second)
	if len(got) != keys*perKey {
		t.Fatalf("published %d messages, want %d", len(got), keys*perKey)
	}
	if n := checkKeyOrder(t, got); n != keys*perKey {
		t.Fatalf("distinct %d, want %d", n, keys*perKey)
	}
	waitFor(t, 5*time.Second, "rows marked sent", func() bool { return unsent(t, pool, topic) == 0 })
	if r.Published() != keys*perKey {
		t.Fatalf("relay counted %d", r.Published())
	}
}

// TestOutboxRollback publishes nothing for a rolled-back transaction.
func TestOutboxRollback(t *testing.T) {
	pool := testPool(t)
	b := startBroker(t, BrokerConfig{})
	brokers := b.Addrs()
	topic := outboxTopic(t)
	createTopics(t, brokers, 1, topic)
	p := newProducer(t, brokers)
	startRelay(t, pool, p, nil)

	errRollback := errors.New("rollback")
	err := pgx.BeginFunc(context.Background(), pool, func(tx pgx.Tx) error {
		if err := Enqueue(context.Background(), tx, OutboxMessage{Topic: topic, Key: "1", Payload: []byte("ghost")}); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("transaction: %v", err)
	}
	enqueueTx(t, pool, OutboxMessage{Topic: topic, Key: "1", Payload: []byte("real")})
	got := readTopic(t, brokers, topic, 1, 1, 10*time.Second)
	if len(got) != 1 || string(got[0].Value) != "real" {
		t.Fatalf("published %d messages, first %q; want only \"real\"", len(got), firstValue(got))
	}
}

func firstValue(ms []Message) string {
	if len(ms) == 0 {
		return ""
	}
	return string(ms[0].Value)
}

// TestOutboxCrashBetweenPublishAndMark: a relay that dies after Kafka
// acknowledged but before the rows were marked leaves them unsent; the next
// relay publishes them again (at-least-once, nothing lost).
func TestOutboxCrashBetweenPublishAndMark(t *testing.T) {
	pool := testPool(t)
	b := startBroker(t, BrokerConfig{})
	brokers := b.Addrs()
	topic := outboxTopic(t)
	createTopics(t, brokers, 1, topic)
	p := newProducer(t, brokers)

	var msgs []OutboxMessage
	for i := range 10 {
		msgs = append(msgs, OutboxMessage{Topic: topic, Key: "k", Payload: fmt.Appendf(nil, "k:%d", i),
			Headers: map[string]string{"x-attempt": "1"}})
	}
	enqueueTx(t, pool, msgs...)

	crashing, err := NewRelay(RelayConfig{Pool: pool, Publisher: p, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	crashing.testAfterPublish = func() error { return errors.New("killed") }
	ctx := context.Background()
	for {
		// Rows of other tests may come first; crash on the batch with ours.
		_, err := crashing.RelayOnce(ctx)
		if err == nil {
			continue
		}
		if !strings.Contains(err.Error(), "killed") {
			t.Fatalf("relay: %v", err)
		}
		if unsent(t, pool, topic) == 10 {
			break
		}
	}
	if got := readTopic(t, brokers, topic, 1, 10, 10*time.Second); len(got) != 10 {
		t.Fatalf("first publish: %d messages", len(got))
	}

	startRelay(t, pool, p, nil)
	got := readTopic(t, brokers, topic, 1, 20, 10*time.Second)
	if len(got) != 20 {
		t.Fatalf("after restart the topic holds %d messages, want the 10 twice", len(got))
	}
	if HeaderValue(got[15], "x-attempt") != "1" {
		t.Fatalf("headers lost: %v", got[15].Headers)
	}
	waitFor(t, 5*time.Second, "rows marked sent", func() bool { return unsent(t, pool, topic) == 0 })
}

// TestOutboxTwoRelays runs two relays (two workers each) over one backlog:
// no row is published twice and keys stay in order.
func TestOutboxTwoRelays(t *testing.T) {
	pool := testPool(t)
	b := startBroker(t, BrokerConfig{})
	brokers := b.Addrs()
	topic := outboxTopic(t)
	const parts, n = 4, 3000
	createTopics(t, brokers, parts, topic)
	p := newProducer(t, brokers)

	var msgs []OutboxMessage
	for i := range n {
		key := "f" + strconv.Itoa(i%37)
		msgs = append(msgs, OutboxMessage{Topic: topic, Key: key, Payload: fmt.Appendf(nil, "%s:%d", key, i)})
		if len(msgs) == 100 {
			enqueueTx(t, pool, msgs...)
			msgs = nil
		}
	}
	small := func(c *RelayConfig) { c.BatchSize = 50 }
	r1 := startRelay(t, pool, p, small)
	r2 := startRelay(t, pool, p, small)
	got := readTopic(t, brokers, topic, parts, n, 30*time.Second)
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
	pool := testPool(t)
	b := startBroker(t, BrokerConfig{})
	brokers := b.Addrs()
	topic := outboxTopic(t)
	createTopics(t, brokers, 1, topic)
	p := newProducer(t, brokers)
	startRelay(t, pool, p, func(c *RelayConfig) { c.PollInterval = 5 * time.Second })

	start := time.Now()
	enqueueTx(t, pool, OutboxMessage{Topic: topic, Key: "1", Payload: []byte("later"), AvailableAt: start.Add(400 * time.Millisecond)})
	got := readTopic(t, brokers, topic, 1, 1, 10*time.Second)
	if len(got) != 1 {
		t.Fatal("delayed row never published")
	}
	if d := got[0].Time.Sub(start); d < 350*time.Millisecond || d > 2*time.Second {
		t.Fatalf("published after %v, want about 400ms", d)
	}
}

// TestOutboxCleanup deletes sent rows older than the retention only.
func TestOutboxCleanup(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	topic := outboxTopic(t)
	enqueueTx(t, pool,
		OutboxMessage{Topic: topic, Payload: []byte("old")},
		OutboxMessage{Topic: topic, Payload: []byte("recent")},
		OutboxMessage{Topic: topic, Payload: []byte("unsent")})
	if _, err := pool.Exec(ctx, `UPDATE outbox SET sent_at = now() - interval '2 hours' WHERE topic = $1 AND payload = 'old'`, topic); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE outbox SET sent_at = now() WHERE topic = $1 AND payload = 'recent'`, topic); err != nil {
		t.Fatal(err)
	}
	r, err := NewRelay(RelayConfig{Pool: pool, Publisher: nopPublisher{}, Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	var left []string
	rows, _ := pool.Query(ctx, `SELECT convert_from(payload, 'UTF8') FROM outbox WHERE topic = $1 ORDER BY id`, topic)
	left, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(left, ",") != "recent,unsent" {
		t.Fatalf("left %v", left)
	}
}

type nopPublisher struct{}

func (nopPublisher) Publish(context.Context, ...Message) error { return nil }

// TestOutboxUnknownTopicDoesNotBlock: a row for a topic the broker does not
// have fails alone; rows of other topics (and other keys) flow, and the
// failed row goes out once its topic exists.
func TestOutboxUnknownTopicDoesNotBlock(t *testing.T) {
	pool := testPool(t)
	b := startBroker(t, BrokerConfig{})
	brokers := b.Addrs()
	good, missing := outboxTopic(t), outboxTopic(t)
	createTopics(t, brokers, 1, good)
	p := newProducer(t, brokers)
	r := startRelay(t, pool, p, nil)
	enqueueTx(t, pool,
		OutboxMessage{Topic: missing, Key: "1", Payload: []byte("1:0")},
		OutboxMessage{Topic: good, Key: "1", Payload: []byte("1:0")},
		OutboxMessage{Topic: missing, Key: "1", Payload: []byte("1:1")})
	for i := 1; i <= 20; i++ {
		enqueueTx(t, pool, OutboxMessage{Topic: good, Key: "1", Payload: fmt.Appendf(nil, "1:%d", i)})
	}
	got := readTopic(t, brokers, good, 1, 21, 10*time.Second)
	if len(got) != 21 {
		t.Fatalf("good topic got %d of 21 while another topic failed", len(got))
	}
	checkKeyOrder(t, got)
	if unsent(t, pool, missing) != 2 {
		t.Fatal("rows of the missing topic left the outbox")
	}
	createTopics(t, brokers, 1, missing)
	late := readTopic(t, brokers, missing, 1, 2, 20*time.Second)
	if len(late) != 2 || string(late[0].Value) != "1:0" || string(late[1].Value) != "1:1" {
		t.Fatalf("missing topic, once created, got %d messages", len(late))
	}
	waitFor(t, 5*time.Second, "all marked", func() bool { return unsent(t, pool, missing) == 0 })
	_ = r
}
