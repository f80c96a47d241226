package streams_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// The relay over a fake of its OutboxStore; the relay against PostgreSQL is
// tested in storage/postgres (outbox_test.go).

// memOutbox is an in-memory OutboxStore for one relay.
type memOutbox struct {
	mu     sync.Mutex
	rows   []docflow.OutboxRow
	sent   map[int64]bool
	busy   map[int64]bool // rows a RelayDue holds, skipped by the others (FOR UPDATE SKIP LOCKED)
	skips  [][]int64      // the skip list of every RelayDue
	wake   chan func()
	locked bool
}

func newMemOutbox(msgs ...docflow.OutboxMessage) *memOutbox {
	o := &memOutbox{sent: map[int64]bool{}, busy: map[int64]bool{}, wake: make(chan func(), 1)}
	o.add(msgs...)
	return o
}

func (o *memOutbox) add(msgs ...docflow.OutboxMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, m := range msgs {
		o.rows = append(o.rows, docflow.OutboxRow{ID: int64(len(o.rows) + 1), OutboxMessage: m})
	}
}

func (o *memOutbox) unsent() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.rows) - len(o.sent)
}

func (o *memOutbox) RelayDue(_ context.Context, limit int, skip []int64,
	publish func([]docflow.OutboxRow) ([]int64, error)) (int, int, error) {
	o.mu.Lock()
	o.skips = append(o.skips, slices.Clone(skip))
	var batch []docflow.OutboxRow
	for _, r := range o.rows {
		if len(batch) < limit && !o.sent[r.ID] && !o.busy[r.ID] && !slices.Contains(skip, r.ID) && r.AvailableAt.Before(time.Now()) {
			batch = append(batch, r)
			o.busy[r.ID] = true
		}
	}
	o.mu.Unlock()
	if len(batch) == 0 {
		return 0, 0, nil
	}
	ids, err := publish(batch)
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range batch {
		delete(o.busy, r.ID)
	}
	if err != nil {
		return 0, 0, err
	}
	for _, id := range ids {
		o.sent[id] = true
	}
	return len(batch), 0, nil
}

func (o *memOutbox) NextDue(context.Context) (time.Duration, bool, error) { return 0, false, nil }

func (o *memOutbox) ListenOutbox(ctx context.Context, wake func()) error {
	wake()
	select {
	case o.wake <- wake:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (o *memOutbox) DeleteSent(context.Context, time.Duration) (int64, error) { return 0, nil }

// recorder is a Publisher that keeps what it got and fails topics named
// "missing.*".
type recorder struct {
	mu   sync.Mutex
	msgs []streams.Message
}

func (r *recorder) Publish(_ context.Context, msgs ...streams.Message) error {
	if strings.HasPrefix(msgs[0].Topic, "missing.") {
		return fmt.Errorf("unknown topic %s", msgs[0].Topic)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, msgs...)
	return nil
}

func (r *recorder) got() []streams.Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// TestRelayPublishesAndMarks: due rows go out in order with their key and
// headers (sorted by name) and are marked sent; rows of a topic that fails
// stay unsent and are skipped (quarantined) by the next batches.
func TestRelayPublishesAndMarks(t *testing.T) {
	t.Parallel()
	store := newMemOutbox(
		docflow.OutboxMessage{Topic: "t", Key: "1", Payload: []byte("a"), Headers: map[string]string{"x-b": "2", "x-a": "1"}},
		docflow.OutboxMessage{Topic: "missing.t", Key: "1", Payload: []byte("lost")},
		docflow.OutboxMessage{Topic: "t", Payload: []byte("b")},
	)
	pub := &recorder{}
	r, err := streams.NewRelay(streams.RelayConfig{Store: store, Publisher: pub, Log: streamstest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n, err := r.RelayOnce(ctx); err != nil || n != 3 {
		t.Fatalf("relay once: %d %v", n, err)
	}
	got := pub.got()
	if len(got) != 2 || string(got[0].Value) != "a" || string(got[1].Value) != "b" {
		t.Fatalf("published %v", got)
	}
	if string(got[0].Key) != "1" || got[1].Key != nil {
		t.Fatalf("keys %q %q", got[0].Key, got[1].Key)
	}
	if h := got[0].Headers; len(h) != 2 || h[0].Key != "x-a" || string(h[0].Value) != "1" || h[1].Key != "x-b" {
		t.Fatalf("headers %v", h)
	}
	if store.unsent() != 1 || r.Published() != 2 {
		t.Fatalf("%d unsent, %d counted", store.unsent(), r.Published())
	}
	if n, err := r.RelayOnce(ctx); err != nil || n != 0 {
		t.Fatalf("second batch: %d %v", n, err)
	}
	if skip := store.skips[len(store.skips)-1]; !slices.Equal(skip, []int64{2}) {
		t.Fatalf("second batch skipped %v, want the failed row 2", skip)
	}
}

// TestRelayWakesOnNotification: a relay whose poll is far away publishes a
// row as soon as the store's listener reports a commit.
func TestRelayWakesOnNotification(t *testing.T) {
	t.Parallel()
	store := newMemOutbox()
	pub := &recorder{}
	r, err := streams.NewRelay(streams.RelayConfig{Store: store, Publisher: pub, PollInterval: time.Hour, Log: streamstest.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	defer r.Close()
	wake := <-store.wake
	store.add(docflow.OutboxMessage{Topic: "t", Key: "1", Payload: []byte("now")})
	wake()
	testsupport.WaitFor(t, time.Minute, "the row published", func() bool { return r.Published() == 1 })
}

// TestRelayPublishErrorRollsBack: a RelayDue that fails after publishing
// counts nothing as published.
func TestRelayPublishErrorRollsBack(t *testing.T) {
	t.Parallel()
	pub := &recorder{}
	r, err := streams.NewRelay(streams.RelayConfig{Store: failingOutbox{newMemOutbox(docflow.OutboxMessage{Topic: "t", Payload: []byte("x")})}, Publisher: pub})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.RelayOnce(context.Background()); err == nil || !strings.Contains(err.Error(), "commit lost") {
		t.Fatalf("relay once: %v", err)
	}
	if r.Published() != 0 {
		t.Fatalf("counted %d", r.Published())
	}
}

type failingOutbox struct{ *memOutbox }

func (f failingOutbox) RelayDue(ctx context.Context, limit int, skip []int64,
	publish func([]docflow.OutboxRow) ([]int64, error)) (int, int, error) {
	_, _, err := f.memOutbox.RelayDue(ctx, limit, skip, publish)
	return 0, 0, errors.Join(err, errors.New("commit lost"))
}

// marker is a SentMarker that keeps the ids.
type marker struct {
	mu  sync.Mutex
	ids []int64
}

func (m *marker) MarkSent(_ context.Context, ids []int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ids = append(m.ids, ids...)
	return nil
}

// TestWriteThrough publishes a transaction's rows as the relay does and
// marks only those the broker took.
func TestWriteThrough(t *testing.T) {
	t.Parallel()
	pub, mk := &recorder{}, &marker{}
	w := streams.NewWriteThrough(pub, mk, streamstest.Log(t))
	msgs := []docflow.OutboxMessage{
		{Topic: "t", Key: "7", Payload: []byte("task"), Headers: map[string]string{"x-b": "2", "x-a": "1"}},
		{Topic: "missing.dlq", Key: "7", Payload: []byte("dead")},
		{Topic: "t", Key: "7", Payload: []byte("event")},
	}
	w.Send(context.Background(), msgs, []int64{10, 11, 12})
	w.Send(context.Background(), msgs[:1], []int64{13, 14}) // ids do not match: nothing
	w.Flush(context.Background())
	got := pub.got()
	if len(got) != 2 || string(got[0].Value) != "task" || string(got[1].Value) != "event" || got[0].Headers[0].Key != "x-a" {
		t.Fatalf("published %v", got)
	}
	if !slices.Equal(mk.ids, []int64{10, 12}) {
		t.Fatalf("marked %v, want 10 and 12", mk.ids)
	}
}
