package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// OutboxStore is what the relay needs of the outbox table, which storage
// owns (storage/postgres.Outbox). Rows are written by the transactions that
// make the changes they announce.
type OutboxStore interface {
	// RelayDue locks up to limit due, unsent rows in id order, skipping the
	// ids in skip and rows another relay holds. It holds back every row
	// that has an earlier due, unsent row of its (topic, key) outside the
	// batch (held by another relay: publishing it first would reorder the
	// key), calls publish with the rest while they stay locked (not when
	// none is left), marks the ids publish returns sent and commits. An
	// error from publish rolls back: the rows stay unsent. It returns how
	// many rows it locked and how many of them it held back.
	RelayDue(ctx context.Context, limit int, skip []int64,
		publish func([]docflow.OutboxRow) (sent []int64, err error)) (locked, heldBack int, err error)
	// NextDue is the wait until the earliest delayed unsent row becomes
	// due; false when there is none.
	NextDue(ctx context.Context) (time.Duration, bool, error)
	// ListenOutbox calls wake once it listens and then at every commit that
	// wrote rows (except those that asked for quiet), until ctx ends or the
	// connection is lost (the error says which).
	ListenOutbox(ctx context.Context, wake func()) error
	// DeleteSent deletes rows sent longer than age ago and returns how many.
	DeleteSent(ctx context.Context, age time.Duration) (int64, error)
}

// RelayConfig configures a Relay.
type RelayConfig struct {
	Store     OutboxStore
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

// Relay publishes outbox rows to Kafka. The store's listener wakes it at
// every commit that enqueued rows; a poll catches anything missed (and
// delayed rows becoming due).
//
// Delivery is at-least-once: a batch is locked (several processes relay
// side by side), published synchronously with acks from all replicas, and
// marked sent in the same transaction only after the broker acknowledged.
// A crash between the publish and the commit publishes the rows again; a
// row is never marked sent without being published. Rows of one (topic,
// key) are published in id order, even with several relays: a row waits
// while an earlier due row of its key is held by another relay.
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
}

// NewRelay checks the configuration; Start runs it.
func NewRelay(cfg RelayConfig) (*Relay, error) {
	if cfg.Store == nil {
		return nil, errors.New("new relay: nil outbox store")
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
		// The first wake covers rows committed while nobody listened.
		err := r.cfg.Store.ListenOutbox(r.ctx, r.poke)
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
				if d, ok, err := r.cfg.Store.NextDue(r.ctx); err == nil && ok && d < next {
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

// publish publishes one batch (publishRows) and returns the ids the broker
// acknowledged.
//
// NOTE: failed rows are quarantined with an exponential backoff so that a
// row that cannot be published (its topic does not exist) cannot stall the
// relay; later rows of the same key wait behind it (RelayDue holds them
// back).
func (r *Relay) publish(ctx context.Context, batch []docflow.OutboxRow) []int64 {
	ok, failures := publishRows(ctx, r.cfg.Publisher, batch)
	for _, f := range failures {
		switch {
		case f.failed < f.rows:
			r.log.Error().Err(f.err).Str("topic", f.topic).Int("failed", f.failed).Msg("outbox publish partly failed")
		case ctx.Err() == nil:
			r.log.Error().Err(f.err).Str("topic", f.topic).Int("rows", f.rows).Int64("first_id", f.first).Msg("outbox publish failed")
		}
	}
	sent := make([]int64, 0, len(batch))
	r.qmu.Lock()
	defer r.qmu.Unlock()
	now := time.Now()
	for i, o := range batch {
		if ok[i] {
			sent = append(sent, o.ID)
			delete(r.quarantine, o.ID)
			continue
		}
		if ctx.Err() != nil {
			continue
		}
		q := r.quarantine[o.ID]
		q.backoff = min(max(2*q.backoff, time.Second), time.Minute)
		q.until = now.Add(q.backoff)
		r.quarantine[o.ID] = q
	}
	return sent
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
	var sent int
	locked, heldBack, err = r.cfg.Store.RelayDue(ctx, r.cfg.BatchSize, r.quarantined(),
		func(batch []docflow.OutboxRow) ([]int64, error) {
			ids := r.publish(ctx, batch)
			sent = len(ids)
			return ids, nil
		})
	if err != nil {
		return 0, 0, fmt.Errorf("relay outbox: %w", err)
	}
	r.published.Add(int64(sent))
	return locked, heldBack, nil
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

// Cleanup deletes rows sent longer ago than Retention and returns how many
// it deleted.
func (r *Relay) Cleanup(ctx context.Context) (int64, error) {
	return r.cfg.Store.DeleteSent(ctx, r.cfg.Retention)
}
