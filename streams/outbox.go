package streams

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

// OutboxChannel is the NOTIFY channel of the outbox insert trigger.
const OutboxChannel = "docflow_outbox"

// OutboxMessage is a message to publish once the transaction that enqueues
// it commits.
type OutboxMessage struct {
	Topic   string
	Key     string // FileKey(file id) for everything about a file
	Payload []byte
	Headers map[string]string
	// AvailableAt delays the publish (retry back-off); zero = at once.
	AvailableAt time.Time
}

// Enqueue writes msgs as outbox rows inside the caller's transaction: they
// are published if and only if tx commits, in id order per (topic, key).
// The insert trigger wakes the relays at commit.
func Enqueue(ctx context.Context, tx pgx.Tx, msgs ...OutboxMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	topics := make([]string, len(msgs))
	keys := make([]string, len(msgs))
	payloads := make([][]byte, len(msgs))
	headers := make([]string, len(msgs))
	avail := make([]*time.Time, len(msgs))
	for i, m := range msgs {
		if m.Topic == "" {
			return fmt.Errorf("enqueue outbox message %d: empty topic", i)
		}
		topics[i], keys[i], payloads[i] = m.Topic, m.Key, m.Payload
		if payloads[i] == nil {
			payloads[i] = []byte{}
		}
		h := m.Headers
		if h == nil {
			h = map[string]string{}
		}
		b, err := json.Marshal(h)
		if err != nil {
			return fmt.Errorf("enqueue outbox message %d: headers: %w", i, err)
		}
		headers[i] = string(b)
		if !m.AvailableAt.IsZero() {
			t := m.AvailableAt
			avail[i] = &t
		}
	}
	// One statement for the whole batch: one round trip, one NOTIFY.
	_, err := tx.Exec(ctx, `
		INSERT INTO outbox (topic, key, payload, headers, available_at)
		SELECT t, k, p, h::jsonb, COALESCE(a, now())
		FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[], $5::timestamptz[])
		     WITH ORDINALITY AS m(t, k, p, h, a, n)
		ORDER BY n`, topics, keys, payloads, headers, avail)
	if err != nil {
		return fmt.Errorf("enqueue %d outbox messages: %w", len(msgs), err)
	}
	return nil
}

// RelayConfig configures a Relay.
type RelayConfig struct {
	Pool      *pgxpool.Pool
	Publisher Publisher
	// BatchSize is the number of rows published per transaction. Default 500.
	BatchSize int
	// Workers publish batches concurrently. Default 2.
	Workers int
	// PollInterval is the fallback when a notification is missed. Default 1 s.
	PollInterval time.Duration
	// Retention keeps sent rows this long (for inspection); default 24 h.
	Retention time.Duration
	// CleanupInterval between deletions of old sent rows; default 10 min.
	CleanupInterval time.Duration
	Log             zerolog.Logger
}

// Relay publishes outbox rows to Kafka. LISTEN on a dedicated connection
// wakes it at every commit that enqueued rows; a poll catches anything
// missed (and delayed rows becoming due).
//
// Delivery is at-least-once: a batch is locked (FOR UPDATE SKIP LOCKED, so
// several processes relay side by side), published synchronously with acks
// from all replicas, and marked sent in the same transaction only after the
// broker acknowledged. A crash between the publish and the commit publishes
// the rows again; a row is never marked sent without being published.
// Rows of one (topic, key) are published in id order, even with several
// relays: a row waits while an earlier due row of its key is held by
// another relay.
type Relay struct {
	cfg RelayConfig
	log zerolog.Logger

	wake      chan struct{}
	published atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	qmu        sync.Mutex
	quarantine map[int64]quarantined // rows whose publish failed, by id

	// testAfterPublish, when set, runs between the publish and the mark; an
	// error rolls the batch back as a crash would.
	testAfterPublish func() error
}

// NewRelay checks the configuration; Start runs it.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Pool == nil {
		return nil, errors.New("new relay: nil pool")
	}
	if cfg.Publisher == nil {
		return nil, errors.New("new relay: nil publisher")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 500
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.Retention <= 0 {
		cfg.Retention = 24 * time.Hour
	}
	if cfg.CleanupInterval <= 0 {
		cfg.CleanupInterval = 10 * time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Relay{
		cfg:        cfg,
		log:        cfg.Log.With().Str("component", "outbox-relay").Logger(),
		wake:       make(chan struct{}, cfg.Workers),
		quarantine: map[int64]quarantined{},
		ctx:        ctx,
		cancel:     cancel,
	}, nil
}

// Published counts rows this relay published and marked sent.
func (r *Relay) Published() int64 { return r.published.Load() }

// Start runs the listener, the publishing workers and the cleanup in the
// background until Close.
func (r *Relay) Start() {
	r.wg.Add(2 + r.cfg.Workers)
	go r.listen()
	go r.cleanupLoop()
	for range r.cfg.Workers {
		go r.work()
	}
	r.poke()
}

// Close stops the relay and waits for its goroutines; a batch being
// published is rolled back and published again by the next relay.
func (r *Relay) Close() {
	r.once.Do(func() {
		r.cancel()
		r.wg.Wait()
	})
}

func (r *Relay) poke() {
	for range r.cfg.Workers {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

func (r *Relay) listen() {
	defer r.wg.Done()
	backoff := 100 * time.Millisecond
	for r.ctx.Err() == nil {
		err := r.listenOnce()
		if r.ctx.Err() != nil {
			return
		}
		r.log.Warn().Err(err).Msg("outbox listener disconnected; reconnecting")
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (r *Relay) listenOnce() error {
	conn, err := pgx.ConnectConfig(r.ctx, r.cfg.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(r.ctx, "LISTEN "+OutboxChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	r.poke() // rows committed while we were not listening
	for {
		if _, err := conn.WaitForNotification(r.ctx); err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		r.poke()
	}
}

func (r *Relay) work() {
	defer r.wg.Done()
	timer := time.NewTimer(r.cfg.PollInterval)
	defer timer.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.wake:
		case <-timer.C:
		}
		next := r.cfg.PollInterval
		for r.ctx.Err() == nil {
			n, held, err := r.relayOnce(r.ctx)
			if err != nil {
				if r.ctx.Err() == nil {
					r.log.Warn().Err(err).Msg("relay outbox batch")
					next = 200 * time.Millisecond
				}
				break
			}
			if held > 0 {
				// Our rows wait for another relay's batch, whose commit
				// notifies nobody; the other workers may also have
				// skipped them while we held them locked.
				r.poke()
				next = 5 * time.Millisecond
				break
			}
			if n < r.cfg.BatchSize {
				if d, ok := r.nextDue(); ok && d < next {
					next = d
				}
				break
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// nextDue is the wait until the earliest delayed row becomes due.
func (r *Relay) nextDue() (time.Duration, bool) {
	var wait *float64
	err := r.cfg.Pool.QueryRow(r.ctx, `
		SELECT EXTRACT(EPOCH FROM min(available_at) - now())
		FROM outbox WHERE sent_at IS NULL AND available_at > now()`).Scan(&wait)
	if err != nil || wait == nil {
		return 0, false
	}
	return max(time.Duration(*wait*float64(time.Second))+time.Millisecond, time.Millisecond), true
}

// quarantined is a row whose publish failed: it is skipped until `until`.
type quarantined struct {
	until   time.Time
	backoff time.Duration
}

// quarantined lists the rows to skip now and forgets expired entries'
// skipping (their backoff is kept for the next failure).
func (r *Relay) quarantined() []int64 {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	now := time.Now()
	ids := []int64{}
	for id, q := range r.quarantine {
		switch {
		case now.Before(q.until):
			ids = append(ids, id)
		case now.Sub(q.until) > 2*time.Minute:
			delete(r.quarantine, id) // not seen again: published by another relay, or deleted
		}
	}
	return ids
}

// publish publishes one batch, one Publish call per topic (concurrently),
// and returns the ids the broker acknowledged.
//
// NOTE: kafka-go fails a whole WriteMessages call when any of its topics is
// unknown, so one bad row would block every batch it is part of. Per-topic
// calls confine a failure to its topic, and failed rows are quarantined
// with an exponential backoff so they cannot stall the relay; later rows of
// the same key wait behind them (holdBackBlocked).
func (r *Relay) publish(ctx context.Context, batch []outboxRow, msgs []Message) []int64 {
	groups := map[string][]int{}
	for i, o := range batch {
		groups[o.topic] = append(groups[o.topic], i)
	}
	ok := make([]bool, len(batch))
	var wg sync.WaitGroup
	for topic, idx := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			part := make([]Message, len(idx))
			for j, i := range idx {
				part[j] = msgs[i]
			}
			err := r.cfg.Publisher.Publish(ctx, part...)
			var werrs kafka.WriteErrors
			switch {
			case err == nil:
				for _, i := range idx {
					ok[i] = true
				}
			case errors.As(err, &werrs) && len(werrs) == len(idx):
				for j, i := range idx {
					ok[i] = werrs[j] == nil
				}
				r.log.Error().Err(err).Str("topic", topic).Int("failed", werrs.Count()).Msg("outbox publish partly failed")
			default:
				if ctx.Err() == nil {
					r.log.Error().Err(err).Str("topic", topic).Int("rows", len(idx)).Int64("first_id", batch[idx[0]].id).Msg("outbox publish failed")
				}
			}
		}()
	}
	wg.Wait()
	sent := make([]int64, 0, len(batch))
	r.qmu.Lock()
	defer r.qmu.Unlock()
	now := time.Now()
	for i, o := range batch {
		if ok[i] {
			sent = append(sent, o.id)
			delete(r.quarantine, o.id)
			continue
		}
		if ctx.Err() != nil {
			continue
		}
		q := r.quarantine[o.id]
		q.backoff = min(max(2*q.backoff, time.Second), time.Minute)
		q.until = now.Add(q.backoff)
		r.quarantine[o.id] = q
	}
	return sent
}

type outboxRow struct {
	id      int64
	topic   string
	key     string
	payload []byte
	headers map[string]string
}

// RelayOnce publishes one batch of due rows and marks them sent; it returns
// how many rows it locked (fewer than BatchSize means the backlog is empty).
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	n, _, err := r.relayOnce(ctx)
	return n, err
}

// relayOnce also reports how many locked rows it held back for another
// relay's batch: the caller retries soon, since that relay's commit sends no
// notification.
func (r *Relay) relayOnce(ctx context.Context) (locked, heldBack int, err error) {
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("relay: begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit

	rows, err := tx.Query(ctx, `
		SELECT id, topic, key, payload, headers FROM outbox
		WHERE sent_at IS NULL AND available_at <= now() AND id <> ALL($2)
		ORDER BY id LIMIT $1
		FOR UPDATE SKIP LOCKED`, r.cfg.BatchSize, r.quarantined())
	if err != nil {
		return 0, 0, fmt.Errorf("relay: select: %w", err)
	}
	var batch []outboxRow
	for rows.Next() {
		var o outboxRow
		if err := rows.Scan(&o.id, &o.topic, &o.key, &o.payload, &o.headers); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("relay: scan: %w", err)
		}
		batch = append(batch, o)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("relay: select: %w", err)
	}
	locked = len(batch)
	if locked == 0 {
		return 0, 0, nil
	}
	if batch, err = r.holdBackBlocked(ctx, tx, batch); err != nil {
		return 0, 0, err
	}
	heldBack = locked - len(batch)

	msgs := make([]Message, len(batch))
	for i, o := range batch {
		m := Message{Topic: o.topic, Value: o.payload}
		if o.key != "" {
			m.Key = []byte(o.key)
		}
		names := make([]string, 0, len(o.headers))
		for k := range o.headers {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			m.Headers = append(m.Headers, Header{Key: k, Value: []byte(o.headers[k])})
		}
		msgs[i] = m
	}
	sent := r.publish(ctx, batch, msgs)
	if r.testAfterPublish != nil {
		if err := r.testAfterPublish(); err != nil {
			return 0, 0, fmt.Errorf("relay: after publish: %w", err)
		}
	}
	if len(sent) == 0 {
		return locked, heldBack, nil // all held back or failed; the rollback unlocks them
	}
	if _, err := tx.Exec(ctx, `UPDATE outbox SET sent_at = now() WHERE id = ANY($1)`, sent); err != nil {
		return 0, 0, fmt.Errorf("relay: mark sent: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("relay: commit: %w", err)
	}
	r.published.Add(int64(len(sent)))
	return locked, heldBack, nil
}

// holdBackBlocked drops from batch (sorted by id) every row that has an
// earlier due, unsent row of the same (topic, key) outside the batch: that
// row is locked by another relay, and publishing ours first would reorder
// the key. The dropped rows stay unsent and are picked up again.
func (r *Relay) holdBackBlocked(ctx context.Context, tx pgx.Tx, batch []outboxRow) ([]outboxRow, error) {
	ids := make([]int64, len(batch))
	topics := make([]string, 0, len(batch))
	keys := make([]string, 0, len(batch))
	seen := map[[2]string]bool{}
	for i, o := range batch {
		ids[i] = o.id
		pk := [2]string{o.topic, o.key}
		if !seen[pk] {
			seen[pk] = true
			topics = append(topics, o.topic)
			keys = append(keys, o.key)
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT o.topic, o.key, min(o.id) FROM outbox o
		JOIN unnest($1::text[], $2::text[]) AS p(topic, key) ON p.topic = o.topic AND p.key = o.key
		WHERE o.sent_at IS NULL AND o.available_at <= now() AND o.id < $3 AND o.id <> ALL($4)
		GROUP BY o.topic, o.key`, topics, keys, ids[len(ids)-1], ids)
	if err != nil {
		return nil, fmt.Errorf("relay: check key order: %w", err)
	}
	blockers := map[[2]string]int64{}
	for rows.Next() {
		var t, k string
		var id int64
		if err := rows.Scan(&t, &k, &id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("relay: check key order: %w", err)
		}
		blockers[[2]string{t, k}] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("relay: check key order: %w", err)
	}
	if len(blockers) == 0 {
		return batch, nil
	}
	kept := batch[:0]
	for _, o := range batch {
		if b, ok := blockers[[2]string{o.topic, o.key}]; ok && o.id > b {
			continue
		}
		kept = append(kept, o)
	}
	return kept, nil
}

func (r *Relay) cleanupLoop() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.CleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
			if n, err := r.Cleanup(r.ctx); err != nil {
				r.log.Warn().Err(err).Msg("outbox cleanup")
			} else if n > 0 {
				r.log.Debug().Int64("deleted", n).Msg("outbox cleanup")
			}
		}
	}
}

// Cleanup deletes rows sent longer ago than Retention, in chunks, and
// returns how many it deleted.
func (r *Relay) Cleanup(ctx context.Context) (int64, error) {
	var total int64
	for {
		tag, err := r.cfg.Pool.Exec(ctx, `
			DELETE FROM outbox WHERE id IN (
				SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < now() - $1::interval
				LIMIT 10000)`, r.cfg.Retention)
		if err != nil {
			return total, fmt.Errorf("outbox cleanup: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 10000 {
			return total, nil
		}
	}
}
