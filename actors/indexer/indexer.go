// Package indexer keeps the search index in step with Postgres. A consumer
// group on the events topic hears about processed, changed and deleted
// files, reads each file's current state from Postgres and indexes it (or
// removes it) in bulk; when a document has an embedding it stores the
// document's nearest neighbours as similarity pairs. Reindex rebuilds the
// whole index from Postgres.
//
// The indexer is one recovered actor ("indexer/<group>"): the consumer's
// fetch goroutines send it each event as a message; it gathers them into
// batches (a timer sends it the flush) and writes one batch at a time.
package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/streams"
)

// DefaultGroupID is the consumer group of the indexer.
const DefaultGroupID = "docflow-indexer"

// Store is what the indexer reads and writes in Postgres
// (postgres.SearchStore).
type Store interface {
	// SearchDocuments returns the documents of the completed files among
	// ids; the others are removed from the index.
	SearchDocuments(ctx context.Context, ids []int64) (map[int64]*docflow.SearchDocument, error)
	ReplaceSimilarityPairs(ctx context.Context, neighbours map[int64][]docflow.Neighbor) error
}

// Config configures an Indexer.
type Config struct {
	// Actors runs the indexer's actor. Required.
	Actors      *actor.Engine
	Brokers     []string
	GroupID     string // DefaultGroupID when empty
	Index       docflow.SearchIndex
	Store       Store
	Settings    docflow.SettingsStore
	DeadLetters streams.Publisher
	Log         zerolog.Logger

	// FlushInterval is how long a batch waits for more events once it has
	// one. Default 50 ms.
	FlushInterval time.Duration
	// MaxAttempts is how often a document the index refuses is tried
	// before its event is dead-lettered. Default 5.
	MaxAttempts int
	// RetryDelay is the first back-off after a failure; it doubles up to
	// 30 s. Default 200 ms.
	RetryDelay time.Duration
	// Consumer adjusts the consumer configuration (tests shorten the group
	// timings).
	Consumer func(*streams.ConsumerConfig)
}

// Indexer is the events-topic consumer that maintains the search index.
//
// The contract with the consumer: an event is acknowledged only once the
// index holds the file's state as Postgres had it when the batch was read
// and its similarity pairs are stored. When Postgres or the index is down,
// the batch is retried with back-off and nothing is acknowledged, so a
// crash redelivers it. A document the index keeps refusing is retried
// MaxAttempts times and then dead-lettered with the reason (a reindex
// restores it once the cause is fixed).
type Indexer struct {
	cfg      Config
	log      zerolog.Logger
	consumer *streams.Consumer
	pid      *actor.PID // the batching actor, once started

	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once

	indexed, removed, deadLettered atomic.Int64
}

type item struct {
	d        *streams.Delivery
	fileID   int64
	attempts int
	due      time.Time
}

// maxInFlight bounds the events held by the indexer at once.
const maxInFlight = 4096

// New checks the configuration and builds the consumer; Start runs it.
func New(cfg Config) (*Indexer, error) {
	switch {
	case cfg.Actors == nil:
		return nil, errors.New("new indexer: nil actor engine")
	case len(cfg.Brokers) == 0:
		return nil, errors.New("new indexer: no brokers")
	case cfg.Index == nil:
		return nil, errors.New("new indexer: nil search index")
	case cfg.Store == nil:
		return nil, errors.New("new indexer: nil store")
	case cfg.Settings == nil:
		return nil, errors.New("new indexer: nil settings")
	case cfg.DeadLetters == nil:
		return nil, errors.New("new indexer: nil dead-letter publisher")
	}
	if cfg.GroupID == "" {
		cfg.GroupID = DefaultGroupID
	}
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 50 * time.Millisecond
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 200 * time.Millisecond
	}
	x := &Indexer{cfg: cfg, log: cfg.Log.With().Str("component", "indexer").Logger()}
	x.ctx, x.cancel = context.WithCancel(context.Background())
	cc := streams.ConsumerConfig{
		Brokers:     cfg.Brokers,
		GroupID:     cfg.GroupID,
		Topics:      []string{streams.TopicEvents},
		Handler:     x.handle,
		Step:        "indexer",
		DeadLetters: cfg.DeadLetters,
		// The actor's inbox holds the unresolved deliveries; this bounds
		// it.
		MaxInFlight:             maxInFlight,
		MaxInFlightPerPartition: 512,
		Log:                     cfg.Log,
	}
	if cfg.Consumer != nil {
		cfg.Consumer(&cc)
		cc.Handler, cc.MaxInFlight = x.handle, maxInFlight
	}
	c, err := streams.NewConsumer(cc)
	if err != nil {
		return nil, fmt.Errorf("new indexer: %w", err)
	}
	x.consumer = c
	return x, nil
}

// Start spawns the batching actor, joins the consumer group and starts
// indexing.
func (x *Indexer) Start() error {
	x.pid = x.cfg.Actors.Spawn(func() actor.Receiver { return &indexActor{x: x} }, "indexer",
		actors.SpawnOpts(x.log, actor.WithID(x.cfg.GroupID))...)
	if err := x.consumer.Start(); err != nil {
		x.cancel()
		x.stopActor(context.Background())
		return err
	}
	return nil
}

// Close stops fetching, finishes the events in hand (until ctx is done;
// the rest are redelivered), commits and leaves the group.
func (x *Indexer) Close(ctx context.Context) error {
	var err error
	x.once.Do(func() {
		err = x.consumer.Close(ctx)
		x.cancel()
		x.stopActor(ctx)
	})
	return err
}

func (x *Indexer) stopActor(ctx context.Context) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	<-x.cfg.Actors.PoisonCtx(sctx, x.pid).Done()
}

// Indexed counts documents written to the index; Removed, documents
// removed; DeadLettered, events given up on.
func (x *Indexer) Indexed() int64      { return x.indexed.Load() }
func (x *Indexer) Removed() int64      { return x.removed.Load() }
func (x *Indexer) DeadLettered() int64 { return x.deadLettered.Load() }

// handle runs on the consumer's fetch goroutine: it decodes and sends the
// delivery to the batching actor.
func (x *Indexer) handle(d *streams.Delivery) {
	id, ok, err := fileEvent(d.Message.Value)
	switch {
	case err != nil:
		d.Nack(err)
	case !ok:
		d.Ack()
	default:
		x.cfg.Actors.Send(x.pid, &item{d: d, fileID: id})
	}
}

// fileEvent returns the file id of an event the indexer acts on; ok is
// false for anything else on the topic. Errors are poison.
func fileEvent(b []byte) (int64, bool, error) {
	env, err := streams.DecodeEnvelope(b)
	if err != nil {
		return 0, false, err
	}
	if env.Type != streams.TypeEvent {
		return 0, false, nil
	}
	_, ev, err := streams.Decode[streams.Event](b)
	if err != nil {
		return 0, false, err
	}
	switch ev.Name {
	case docflow.EventDocumentProcessed, streams.EventFileUpdated, streams.EventFileDeleted:
	default:
		return 0, false, nil
	}
	id, err := dataFileID(ev.Data["file_id"])
	if err != nil {
		return 0, false, streams.Poison(fmt.Errorf("event %s %s: %w", ev.Name, ev.ID, err))
	}
	return id, true, nil
}

func dataFileID(v any) (int64, error) {
	var id int64
	switch t := v.(type) {
	case float64:
		if t != math.Trunc(t) || t > math.MaxInt64 {
			return 0, fmt.Errorf("file_id %v is not an integer", t)
		}
		id = int64(t)
	case json.Number:
		n, err := t.Int64()
		if err != nil {
			return 0, fmt.Errorf("file_id %q: %w", t, err)
		}
		id = n
	case string:
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("file_id %q: %w", t, err)
		}
		id = n
	case nil:
		return 0, errors.New("file_id is missing")
	default:
		return 0, fmt.Errorf("file_id has type %T", v)
	}
	if id <= 0 {
		return 0, fmt.Errorf("file_id %d is not positive", id)
	}
	return id, nil
}

func (x *Indexer) batchSize() int {
	return min(max(docflow.SearchIndexerBatch.Get(x.cfg.Settings), 1), 5000)
}

// indexActor is the indexer's actor. It collects events into batches: once it
// holds one, it takes what else arrives within FlushInterval, up to the
// batch size. Items waiting for a retry join the first batch after they
// are due. A batch is written in the receive (x.process): the events that
// arrive meanwhile wait in the inbox, as they waited in a channel before.
type indexActor struct {
	x       *Indexer
	pending []*item // arrived or due, not yet written
	retry   []*item // waiting until due
	flush   *time.Timer
	wake    *time.Timer
	wakeAt  time.Time
}

// Timer messages of the indexer's actor.
type (
	flushNow struct{}
	retryDue struct{}
)

func (b *indexActor) Receive(c *actor.Context) {
	x := b.x
	switch m := c.Message().(type) {
	case *item:
		b.pending = append(b.pending, m)
		if len(b.pending) >= x.batchSize() {
			b.write(c)
		} else {
			b.armFlush(c)
		}
	case flushNow:
		b.flush = nil
		b.write(c)
	case retryDue:
		b.wake, b.wakeAt = nil, time.Time{}
		b.takeDue()
		b.armRetry(c)
		if len(b.pending) > 0 {
			b.armFlush(c)
		}
	case actor.Stopped:
		// Unresolved deliveries are redelivered.
		if b.flush != nil {
			b.flush.Stop()
		}
		if b.wake != nil {
			b.wake.Stop()
		}
	}
}

// armFlush has the timer send flushNow FlushInterval after the first
// pending item.
func (b *indexActor) armFlush(c *actor.Context) {
	if b.flush != nil || len(b.pending) == 0 {
		return
	}
	e, pid := c.Engine(), c.PID()
	b.flush = time.AfterFunc(b.x.cfg.FlushInterval, func() { e.Send(pid, flushNow{}) })
}

// armRetry has the timer send retryDue when the earliest retry is due.
func (b *indexActor) armRetry(c *actor.Context) {
	var next time.Time
	for _, it := range b.retry {
		if next.IsZero() || it.due.Before(next) {
			next = it.due
		}
	}
	if next.IsZero() || (b.wake != nil && !b.wakeAt.After(next)) {
		return
	}
	if b.wake != nil {
		b.wake.Stop()
	}
	e, pid := c.Engine(), c.PID()
	b.wake, b.wakeAt = time.AfterFunc(time.Until(next), func() { e.Send(pid, retryDue{}) }), next
}

// takeDue moves the retries that are due to pending.
func (b *indexActor) takeDue() {
	now := time.Now()
	keep := b.retry[:0]
	for _, it := range b.retry {
		if !it.due.After(now) {
			b.pending = append(b.pending, it)
		} else {
			keep = append(keep, it)
		}
	}
	clear(b.retry[len(keep):])
	b.retry = keep
}

// write writes batches of the pending items until fewer than a batch are
// left, then arms the flush for the rest.
func (b *indexActor) write(c *actor.Context) {
	x := b.x
	if b.flush != nil {
		b.flush.Stop()
		b.flush = nil
	}
	for len(b.pending) > 0 && x.ctx.Err() == nil {
		n := min(len(b.pending), x.batchSize())
		batch := append([]*item(nil), b.pending[:n]...)
		rest := copy(b.pending, b.pending[n:])
		clear(b.pending[rest:])
		b.pending = b.pending[:rest]
		b.retry = append(b.retry, x.process(batch)...)
		if len(b.pending) < x.batchSize() {
			break
		}
	}
	b.armRetry(c)
	b.armFlush(c)
}

// process applies one batch until it succeeds as a whole (retrying with
// back-off) and resolves its deliveries. It returns the items to try again
// later.
func (x *Indexer) process(batch []*item) []*item {
	seen := make(map[int64]bool, len(batch))
	ids := make([]int64, 0, len(batch))
	for _, it := range batch {
		if !seen[it.fileID] {
			seen[it.fileID] = true
			ids = append(ids, it.fileID)
		}
	}
	// On an event's last attempt a document the index refuses with its
	// embedding is indexed without it, so its text stays searchable.
	lastChance := map[int64]bool{}
	for _, it := range batch {
		if it.attempts == x.cfg.MaxAttempts-1 {
			lastChance[it.fileID] = true
		}
	}
	delay := x.cfg.RetryDelay
	var failed map[int64]error
	for {
		var err error
		failed, err = x.apply(x.ctx, ids, lastChance)
		if err == nil {
			break
		}
		if x.ctx.Err() != nil {
			return nil // closing: unresolved deliveries are redelivered
		}
		x.log.Warn().Err(err).Int("documents", len(ids)).Dur("retry_in", delay).Msg("index batch failed; retrying")
		select {
		case <-time.After(delay):
		case <-x.ctx.Done():
			return nil
		}
		delay = min(2*delay, 30*time.Second)
	}
	var again []*item
	for _, it := range batch {
		err, bad := failed[it.fileID]
		if !bad {
			it.d.Ack()
			continue
		}
		it.attempts++
		if it.attempts >= x.cfg.MaxAttempts {
			x.deadLettered.Add(1)
			x.log.Error().Err(err).Int64("file_id", it.fileID).Int("attempts", it.attempts).Msg("document not indexed; event dead-lettered")
			it.d.Nack(fmt.Errorf("index file %d after %d attempts: %w", it.fileID, it.attempts, err))
			continue
		}
		backoff := x.cfg.RetryDelay << min(it.attempts-1, 8)
		it.due = time.Now().Add(min(backoff, 30*time.Second))
		x.log.Warn().Err(err).Int64("file_id", it.fileID).Int("attempt", it.attempts).Msg("document not indexed; will retry")
		again = append(again, it)
	}
	return again
}

// apply brings the index in line with Postgres for ids. The returned map
// holds the documents the index refused; an error fails the whole batch.
func (x *Indexer) apply(ctx context.Context, ids []int64, lastChance map[int64]bool) (map[int64]error, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	docs, err := x.cfg.Store.SearchDocuments(ctx, ids)
	if err != nil {
		return nil, err
	}
	toIndex := make([]*docflow.SearchDocument, 0, len(docs))
	var toDelete []int64
	for _, id := range ids {
		if d, ok := docs[id]; ok {
			toIndex = append(toIndex, d)
		} else {
			toDelete = append(toDelete, id)
		}
	}
	failed := map[int64]error{}
	if len(toIndex) > 0 {
		f, err := x.cfg.Index.Index(ctx, toIndex)
		if err != nil {
			return nil, fmt.Errorf("index %d documents: %w", len(toIndex), err)
		}
		for id, e := range f {
			failed[id] = e
		}
		if err := x.withoutEmbeddings(ctx, toIndex, failed, lastChance); err != nil {
			return nil, err
		}
	}
	if len(toDelete) > 0 {
		if err := x.cfg.Index.Delete(ctx, toDelete); err != nil {
			return nil, fmt.Errorf("remove %d documents: %w", len(toDelete), err)
		}
	}
	neighbours, err := pairs(ctx, x.cfg.Index, x.cfg.Settings, toIndex, failed)
	if err != nil {
		return nil, err
	}
	if err := x.cfg.Store.ReplaceSimilarityPairs(ctx, neighbours); err != nil {
		return nil, err
	}
	x.indexed.Add(int64(len(toIndex) - len(failed)))
	x.removed.Add(int64(len(toDelete)))
	return failed, nil
}

// pairs finds the stored neighbours of each indexed document: those at or
// above SIMILARITY_PAIR_THRESHOLD, at most SIMILARITY_PAIR_LIMIT of them.
// A document without an embedding gets none (its old pairs go). Documents
// whose lookup fails are added to failed.
func pairs(ctx context.Context, idx docflow.SearchIndex, settings docflow.SettingsStore, docs []*docflow.SearchDocument, failed map[int64]error) (map[int64][]docflow.Neighbor, error) {
	threshold := min(max(docflow.SimilarityPairThreshold.Get(settings), 0), 1)
	limit := min(max(docflow.SimilarityPairLimit.Get(settings), 1), 200)
	out := make(map[int64][]docflow.Neighbor, len(docs))
	for _, d := range docs {
		if _, bad := failed[d.FileID]; bad {
			continue
		}
		if len(d.Embedding) == 0 {
			out[d.FileID] = nil
			continue
		}
		ns, err := idx.Nearest(ctx, d.Embedding, limit, threshold, nil, d.FileID)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			failed[d.FileID] = fmt.Errorf("similar documents: %w", err)
			continue
		}
		out[d.FileID] = ns
	}
	return out, nil
}

// withoutEmbeddings indexes the refused documents of lastChance that have
// an embedding once more without it, and drops those that succeed from
// failed.
func (x *Indexer) withoutEmbeddings(ctx context.Context, docs []*docflow.SearchDocument, failed map[int64]error, lastChance map[int64]bool) error {
	var again []*docflow.SearchDocument
	for _, d := range docs {
		if _, bad := failed[d.FileID]; bad && lastChance[d.FileID] && len(d.Embedding) > 0 {
			c := *d
			c.Embedding = nil
			again = append(again, &c)
		}
	}
	if len(again) == 0 {
		return nil
	}
	f, err := x.cfg.Index.Index(ctx, again)
	if err != nil {
		return fmt.Errorf("index %d documents without embeddings: %w", len(again), err)
	}
	for _, d := range again {
		if _, bad := f[d.FileID]; bad {
			continue
		}
		x.log.Warn().Err(failed[d.FileID]).Int64("file_id", d.FileID).Msg("document indexed without its embedding")
		delete(failed, d.FileID)
		for i, orig := range docs {
			if orig.FileID == d.FileID {
				docs[i] = d // no pairs for it
			}
		}
	}
	return nil
}
