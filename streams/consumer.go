package streams

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

// Handler receives each consumed message. It is called on the partition's
// fetch goroutine, in offset order, and must not block: it hands the
// delivery on (to an actor, a goroutine) and returns. Many deliveries are in
// flight at once, up to the consumer's budgets.
//
// The contract: exactly one of Ack or Nack is called on every delivery,
// from any goroutine, at any later time (later calls are ignored).
//   - Ack once the work is durably recorded (the Postgres transaction that
//     holds the step result and the next outbox row has committed). The
//     offset is committed when every earlier offset of the partition is
//     acknowledged too, so a crash before that redelivers the message
//     (at-least-once: handlers are idempotent).
//   - Nack(err) when the work failed. A poison error (IsPoison) is
//     dead-lettered at once; any other error goes to the consumer's
//     FailurePolicy. The message counts as acknowledged once the dead letter
//     or the policy's publish is acknowledged by the broker.
//
// A delivery that is never resolved holds back its partition's commit point
// (and, once the partition's budget is used up, pauses that partition) but
// no other partition.
type Handler func(d *Delivery)

// FailurePolicy handles a Nacked, non-poison message: typically it publishes
// the task to a retry topic, or to the dead-letter topic after the last
// attempt. It returns nil once that publish is acknowledged; an error makes
// the consumer call it again with a backoff (the partition's commit point
// waits) until it succeeds or the partition is revoked.
type FailurePolicy func(ctx context.Context, m Message, cause error) error

// ConsumerConfig configures a Consumer.
type ConsumerConfig struct {
	Brokers []string
	GroupID string
	Topics  []string
	Handler Handler

	// Step names the consumer in dead letters (header x-step).
	Step string
	// DeadLetters receives poison messages and, without a FailurePolicy,
	// every failure. Required.
	DeadLetters Publisher
	// DLQTopic defaults to TopicDLQ.
	DLQTopic string
	// OnFailure routes Nacked messages; nil = dead-letter them.
	OnFailure FailurePolicy

	// MaxInFlightPerPartition caps the uncommitted window of one partition
	// (unacknowledged messages plus acknowledged ones above an
	// unacknowledged one); a full partition is paused. Default 64.
	MaxInFlightPerPartition int
	// MaxInFlight caps unacknowledged messages over all partitions. Default
	// 1024.
	MaxInFlight int
	// CommitInterval is how often advanced commit points are committed.
	// Default 100 ms.
	CommitInterval time.Duration
	// DrainTimeout bounds the wait for in-flight messages of a partition
	// being revoked before it is handed over; keep it below
	// RebalanceTimeout. Default 5 s.
	DrainTimeout time.Duration

	HeartbeatInterval time.Duration // default 1 s
	SessionTimeout    time.Duration // default 10 s
	RebalanceTimeout  time.Duration // default 30 s
	// StartOffset applies when the group has no committed offset:
	// kafka.FirstOffset (default) or kafka.LastOffset.
	StartOffset int64
	// MaxWait bounds one fetch long-poll. Default 500 ms. It is also the
	// time the broker's answer is given at first: after an answer that came
	// later, the partition's fetches wait twice as long, up to
	// maxFetchWait.
	MaxWait time.Duration

	Log zerolog.Logger
}

// Consumer reads topics as a member of a consumer group and commits, per
// partition, only the contiguous acknowledged offsets.
//
// NOTE: it drives kafka-go's ConsumerGroup directly, with one
// partition-bound kafka.Reader (FetchMessage only) per assigned partition,
// rather than a group Reader: a group Reader merges all partitions into one
// stream, so it could only pause all of them at once; here each partition
// stops fetching on its own when its in-flight budget is used up.
type Consumer struct {
	cfg ConsumerConfig
	log zerolog.Logger
	cg  *kafka.ConsumerGroup

	sem       chan struct{} // one token per unresolved delivery
	inflight  atomic.Int64
	idle      chan struct{} // poked when inflight drops
	stopFetch chan struct{} // closed by Close: fetch nothing more
	abandon   chan struct{} // closed when Close's deadline passed
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup // generation loop, failure handlers

	startOnce, closeOnce sync.Once
	closeErr             error

	mu   sync.Mutex
	gens int // generations joined (for tests and logs)

	// Late fetches are warned of once per lateLogEvery for the consumer
	// (lateWarn is sampled), with how many happened since (a slow broker
	// makes every partition's fetches late at once); each one at debug.
	lateWarn  zerolog.Logger
	lateSince atomic.Int64
}

// lateLogEvery spaces the consumer's warnings about late fetches.
const lateLogEvery = 30 * time.Second

// lateFetch notes that a partition's fetch was answered late and that its
// next reader waits longer.
func (c *Consumer) lateFetch(log zerolog.Logger, wait time.Duration, offset int64) {
	log.Debug().Dur("wait", wait).Int64("offset", offset).Msg("fetch answered late; fetching again with a longer wait")
	c.lateSince.Add(1)
	// NOTE: the count is taken only when the sampler lets the warning
	// through, so the late fetches it leaves out are counted in the next.
	if e := c.lateWarn.Warn(); e.Enabled() {
		e.Int64("late_fetches", c.lateSince.Swap(0)).Dur("wait", wait).
			Msg("broker answering fetches late; partitions fetch again with longer waits (a busy or distant broker)")
	}
}

// NewConsumer validates the configuration; Start joins the group.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	switch {
	case len(cfg.Brokers) == 0:
		return nil, errors.New("new consumer: no brokers")
	case cfg.GroupID == "":
		return nil, errors.New("new consumer: no group id")
	case len(cfg.Topics) == 0:
		return nil, errors.New("new consumer: no topics")
	case cfg.Handler == nil:
		return nil, errors.New("new consumer: nil handler")
	case cfg.DeadLetters == nil:
		return nil, errors.New("new consumer: nil dead-letter publisher")
	}
	if cfg.DLQTopic == "" {
		cfg.DLQTopic = TopicDLQ
	}
	if cfg.MaxInFlightPerPartition <= 0 {
		cfg.MaxInFlightPerPartition = 64
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 1024
	}
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = 100 * time.Millisecond
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 5 * time.Second
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = time.Second
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.RebalanceTimeout <= 0 {
		cfg.RebalanceTimeout = 30 * time.Second
	}
	if cfg.StartOffset == 0 {
		cfg.StartOffset = kafka.FirstOffset
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := cfg.Log.With().Str("group", cfg.GroupID).Logger()
	return &Consumer{
		cfg:       cfg,
		log:       log,
		lateWarn:  log.Sample(&zerolog.BurstSampler{Burst: 1, Period: lateLogEvery}),
		sem:       make(chan struct{}, cfg.MaxInFlight),
		idle:      make(chan struct{}, 1),
		stopFetch: make(chan struct{}),
		abandon:   make(chan struct{}),
		ctx:       ctx,
		cancel:    cancel,
	}, nil
}

// Start joins the group and starts consuming in the background.
func (c *Consumer) Start() error {
	var err error
	c.startOnce.Do(func() {
		c.cg, err = kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
			ID:                c.cfg.GroupID,
			Brokers:           c.cfg.Brokers,
			Topics:            c.cfg.Topics,
			HeartbeatInterval: c.cfg.HeartbeatInterval,
			SessionTimeout:    c.cfg.SessionTimeout,
			RebalanceTimeout:  c.cfg.RebalanceTimeout,
			JoinGroupBackoff:  500 * time.Millisecond,
			StartOffset:       c.cfg.StartOffset,
			Timeout:           10 * time.Second,
		})
		if err != nil {
			err = fmt.Errorf("start consumer %s: %w", c.cfg.GroupID, err)
			return
		}
		c.wg.Add(1)
		go c.run()
	})
	return err
}

// InFlight is the number of unresolved deliveries.
func (c *Consumer) InFlight() int { return int(c.inflight.Load()) }

// Generations is the number of group generations this consumer joined.
func (c *Consumer) Generations() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gens
}

// Close stops fetching, waits until every in-flight delivery is resolved or
// ctx is done, commits the acknowledged offsets, leaves the group and
// returns. Deliveries resolved after Close are ignored (redelivered to the
// next member).
func (c *Consumer) Close(ctx context.Context) error {
	c.closeOnce.Do(func() {
		close(c.stopFetch)
		for c.inflight.Load() > 0 {
			select {
			case <-c.idle:
			case <-ctx.Done():
				c.log.Warn().Int64("in_flight", c.inflight.Load()).Msg("consumer close: deadline with messages in flight")
			case <-time.After(50 * time.Millisecond):
			}
			if ctx.Err() != nil {
				break
			}
		}
		close(c.abandon)
		if c.cg != nil {
			// Ends the generation: partitions commit their final commit
			// points and return; then the group is left.
			if err := c.cg.Close(); err != nil {
				c.closeErr = fmt.Errorf("close consumer %s: %w", c.cfg.GroupID, err)
			}
		}
		c.cancel()
		c.wg.Wait()
	})
	return c.closeErr
}

func (c *Consumer) run() {
	defer c.wg.Done()
	for {
		gen, err := c.cg.Next(c.ctx)
		if err != nil {
			if errors.Is(err, kafka.ErrGroupClosed) || c.ctx.Err() != nil {
				return
			}
			c.log.Warn().Err(err).Msg("consumer group: next generation")
			select {
			case <-time.After(200 * time.Millisecond):
			case <-c.ctx.Done():
				return
			}
			continue
		}
		c.mu.Lock()
		c.gens++
		c.mu.Unlock()
		g := &generation{gen: gen, c: c}
		n := 0
		for topic, assigns := range gen.Assignments {
			for _, a := range assigns {
				p := &partition{g: g, topic: topic, id: a.ID, tr: newOffsetTracker(), lastCommitted: a.Offset, wake: make(chan struct{}, 1)}
				g.parts = append(g.parts, p)
				n++
				gen.Start(func(ctx context.Context) { c.consumePartition(ctx, p, a.Offset) })
			}
		}
		c.log.Info().Int32("generation", gen.ID).Int("partitions", n).Msg("consumer group: joined generation")
		gen.Start(g.commitLoop)
	}
}

// generation is one group generation's state: its partitions and commits.
type generation struct {
	gen   *kafka.Generation
	c     *Consumer
	parts []*partition // fixed after run() started the goroutines

	commitMu sync.Mutex
}

func (g *generation) commitLoop(ctx context.Context) {
	t := time.NewTicker(g.c.cfg.CommitInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.commit(g.parts...)
		}
	}
}

// commit commits the advanced commit points of parts.
func (g *generation) commit(parts ...*partition) {
	g.commitMu.Lock()
	defer g.commitMu.Unlock()
	offsets := map[string]map[int]int64{}
	var todo []*partition
	var points []int64
	for _, p := range parts {
		p.mu.Lock()
		next := p.tr.commitPoint()
		p.mu.Unlock()
		if next < 0 || next <= p.lastCommitted {
			continue
		}
		if offsets[p.topic] == nil {
			offsets[p.topic] = map[int]int64{}
		}
		offsets[p.topic][p.id] = next
		todo = append(todo, p)
		points = append(points, next)
	}
	if len(todo) == 0 {
		return
	}
	if err := g.gen.CommitOffsets(offsets); err != nil {
		g.c.log.Warn().Err(err).Int32("generation", g.gen.ID).Msg("commit offsets")
		return
	}
	for i, p := range todo {
		p.lastCommitted = points[i] // only touched under commitMu
	}
}

// partition is one assigned partition within a generation.
type partition struct {
	g     *generation
	topic string
	id    int

	mu            sync.Mutex
	tr            *offsetTracker
	unresolved    int  // deliveries not yet resolved
	revoked       bool // the generation ended: acks no longer count
	lastCommitted int64
	wake          chan struct{} // poked on every resolution
	// owned is done once the partition is revoked or the consumer closed
	// (set before its first delivery).
	owned context.Context
}

func (p *partition) poke() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// maxFetchWait caps the time a partition's fetch is given for the
// broker's answer once answers came late (see consumePartition).
const maxFetchWait = 10 * time.Second

// slowHandover is how long a revoked partition may take to hand over
// (its reader closed, its deliveries drained, its offsets committed)
// before it is logged: the generation, and so the whole group, waits for
// the slowest of its partitions.
const slowHandover = maxFetchWait + 10*time.Second

// readerQueue caps the messages a partition's reader fetches ahead of
// its dispatch. The reader allocates its whole queue when it is made
// (about 200 bytes a message), idle or not: a queue as long as the
// partition's in-flight window (up to 2048 for the delivery retry tiers)
// cost a worker tens of MiB across its partitions, and the window does
// not need it: the reader fills the queue again while the window's
// messages are handled.
const readerQueue = 128

// readerErrorEvery spaces a partition's logged reader errors.
const readerErrorEvery = 30 * time.Second

func (c *Consumer) consumePartition(ctx context.Context, p *partition, start int64) {
	p.owned = ctx
	log := c.log.With().Str("topic", p.topic).Int("partition", p.id).Logger()
	var revokedAt atomic.Int64
	context.AfterFunc(ctx, func() { revokedAt.Store(time.Now().UnixNano()) })
	defer func() {
		if at := revokedAt.Load(); at != 0 {
			if d := time.Since(time.Unix(0, at)); d > slowHandover {
				log.Warn().Dur("took", d).Msg("revoked partition handed over slowly; its group waited for it")
			}
		}
	}()
	fetchCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-c.stopFetch:
			stop()
		case <-fetchCtx.Done():
		}
	}()

	// NOTE: kafka-go's reader gives a fetch MaxWait, the broker's long-poll
	// time, as its deadline for the whole answer too. An answer later than
	// that (a busy broker: the embedded one answers every client on one
	// goroutine; a large backlog to send) fails the fetch, and the reader
	// sends the same fetch again, which is as slow: the partition would
	// never move again, however little is in flight. So a fetch that timed
	// out ends this reader, and the next one gives its fetches twice the
	// time, up to maxFetchWait (which also bounds how long closing the
	// reader waits for a fetch under way), resuming after the last
	// dispatched message. The reader tells of the timeout only to its error
	// logger, hence the hook.
	wait, next := c.cfg.MaxWait, start
	// The reader tries again by itself; a partition that keeps failing is
	// said once in a while.
	errLog := log.Sample(&zerolog.BurstSampler{Burst: 1, Period: readerErrorEvery})
	for {
		readCtx, abort := context.WithCancel(fetchCtx)
		var late atomic.Bool
		from := next
		r := kafka.NewReader(kafka.ReaderConfig{
			Brokers:               c.cfg.Brokers,
			Topic:                 p.topic,
			Partition:             p.id,
			MinBytes:              1,
			MaxBytes:              8 << 20,
			MaxWait:               wait,
			QueueCapacity:         min(c.cfg.MaxInFlightPerPartition, readerQueue),
			OffsetOutOfRangeError: true,
			ReadBackoffMin:        20 * time.Millisecond,
			ReadBackoffMax:        time.Second,
			// No lag reading of the reader's own: it would dial the
			// partition's leader on a connection of its own when the
			// reader starts and every minute after, for a figure nobody
			// reads (the lag is PartitionLags').
			ReadLagInterval: -1,
			ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
				if timedOut(args) {
					late.Store(true)
					abort()
					return
				}
				if readCtx.Err() != nil {
					return
				}
				if e := errLog.Warn(); e.Enabled() {
					e.Str("error", fmt.Sprintf(msg, args...)).Int64("from", from).Msg("partition reader: trying again")
				}
			}),
		})
		if next >= 0 || next == kafka.FirstOffset || next == kafka.LastOffset {
			if err := r.SetOffset(next); err != nil {
				log.Warn().Err(err).Int64("offset", next).Msg("set offset")
			}
		}
		next = c.fetchLoop(readCtx, r, p, next, log)
		abort()
		r.Close()
		if fetchCtx.Err() != nil || !late.Load() {
			break
		}
		if wait < maxFetchWait {
			wait = min(2*wait, maxFetchWait)
			c.lateFetch(log, wait, next)
		}
	}

	// Revoked or closing: give in-flight deliveries DrainTimeout to resolve,
	// commit what is contiguous, hand the partition over.
	deadline := time.NewTimer(c.cfg.DrainTimeout)
	defer deadline.Stop()
drain:
	for {
		p.mu.Lock()
		n := p.unresolved
		p.mu.Unlock()
		if n == 0 {
			break
		}
		select {
		case <-p.wake:
		case <-deadline.C:
			log.Warn().Int("in_flight", n).Msg("partition revoked with messages in flight; they will be redelivered")
			break drain
		case <-c.abandon:
			break drain
		}
	}
	p.g.commit(p)
	p.mu.Lock()
	p.revoked = true
	p.mu.Unlock()
}

// timedOut reports whether a kafka-go error log's arguments hold a
// timeout (a fetch whose answer came after its deadline).
func timedOut(args []any) bool {
	for _, a := range args {
		var ne net.Error
		if err, ok := a.(error); ok && errors.As(err, &ne) && ne.Timeout() {
			return true
		}
	}
	return false
}

// fetchLoop dispatches r's messages until ctx is done and returns the
// offset to fetch next (next when it dispatched none).
func (c *Consumer) fetchLoop(ctx context.Context, r *kafka.Reader, p *partition, next int64, log zerolog.Logger) int64 {
	for {
		// Pause while the partition's window is full.
		for {
			p.mu.Lock()
			full := p.tr.window() >= c.cfg.MaxInFlightPerPartition
			p.mu.Unlock()
			if !full {
				break
			}
			select {
			case <-p.wake:
			case <-ctx.Done():
				return next
			}
		}
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return next
			}
			if errors.Is(err, kafka.OffsetOutOfRange) {
				// NOTE: the committed offset is beyond the log (a broker
				// that lost its data) or below its start (retention):
				// start over from the earliest message; start-up recovery
				// re-publishes whatever Postgres says is unfinished.
				log.Warn().Err(err).Msg("offset out of range; resetting to the earliest offset")
				_ = r.SetOffset(kafka.FirstOffset)
				next = kafka.FirstOffset
				continue
			}
			log.Warn().Err(err).Msg("fetch")
			select {
			case <-time.After(200 * time.Millisecond):
			case <-ctx.Done():
				return next
			}
			continue
		}
		if next >= 0 && m.Offset < next {
			continue // already dispatched (a new reader's batch may start before it)
		}
		// Global budget: wait for a token (this pauses the partition too).
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return next // the message is not tracked: it will be fetched again
		}
		p.mu.Lock()
		p.tr.add(m.Offset)
		p.unresolved++
		p.mu.Unlock()
		c.inflight.Add(1)
		next = m.Offset + 1
		d := &Delivery{Message: m, p: p, c: c}
		c.dispatch(d)
	}
}

func (c *Consumer) dispatch(d *Delivery) {
	defer func() {
		if v := recover(); v != nil {
			c.log.Error().Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).Msg("consumer handler panicked")
			d.Nack(fmt.Errorf("handler panic: %v", v))
		}
	}()
	c.cfg.Handler(d)
}

// Delivery is one consumed message awaiting its Ack or Nack.
type Delivery struct {
	Message Message

	p        *partition
	c        *Consumer
	resolved atomic.Bool
}

// Context is cancelled when the consumer is closed for good.
func (d *Delivery) Context() context.Context { return d.c.ctx }

// Owned is done once this consumer no longer owns the message's
// partition: revoked at a rebalance (another member of the group gets the
// message again unless it was acknowledged first) or the consumer closed.
// Work that must run in one process at a time (one partition's keys) stops
// when it is done.
func (d *Delivery) Owned() context.Context {
	if d.p == nil || d.p.owned == nil {
		return d.c.ctx
	}
	return d.p.owned
}

// Ack acknowledges the message: its work is durably recorded. See Handler.
func (d *Delivery) Ack() {
	if d.resolved.Swap(true) {
		return
	}
	d.finish(true)
}

// Release gives the message up without acknowledging it, for work
// abandoned because the partition was lost (Owned is done): the next
// owner of the partition gets it again. Called while the partition is
// still owned, it holds the partition's commit point back until the next
// rebalance.
func (d *Delivery) Release() {
	if d.resolved.Swap(true) {
		return
	}
	d.finish(false)
}

// Nack reports that the message's work failed with err. Poison errors are
// dead-lettered; others go to the FailurePolicy. See Handler.
func (d *Delivery) Nack(err error) {
	if d.resolved.Swap(true) {
		return
	}
	if err == nil {
		err = errors.New("nack without a reason")
	}
	c := d.c
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		d.finish(c.handleFailure(d, err))
	}()
}

// handleFailure routes a failed message and reports whether it may count as
// acknowledged.
func (c *Consumer) handleFailure(d *Delivery, cause error) bool {
	backoff := 100 * time.Millisecond
	for {
		d.p.mu.Lock()
		revoked := d.p.revoked
		d.p.mu.Unlock()
		if revoked {
			return false // the next owner gets the message again
		}
		var err error
		if IsPoison(cause) || c.cfg.OnFailure == nil {
			attempt, _ := strconv.Atoi(HeaderValue(d.Message, HeaderAttempt))
			err = c.cfg.DeadLetters.Publish(c.ctx, DeadLetter(d.Message, c.cfg.DLQTopic, cause.Error(), c.cfg.Step, attempt))
			if err == nil {
				c.log.Warn().Str("topic", d.Message.Topic).Int("partition", d.Message.Partition).
					Int64("offset", d.Message.Offset).Str("reason", cause.Error()).Msg("message dead-lettered")
			}
		} else {
			err = c.cfg.OnFailure(c.ctx, d.Message, cause)
		}
		if err == nil {
			return true
		}
		if c.ctx.Err() != nil {
			return false
		}
		c.log.Warn().Err(err).Str("topic", d.Message.Topic).Int64("offset", d.Message.Offset).Msg("route failed message; retrying")
		select {
		case <-time.After(backoff):
		case <-c.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (d *Delivery) finish(ok bool) {
	p := d.p
	p.mu.Lock()
	p.unresolved--
	if ok && !p.revoked {
		p.tr.ack(d.Message.Offset)
	}
	p.mu.Unlock()
	p.poke()
	<-d.c.sem
	d.c.inflight.Add(-1)
	select {
	case d.c.idle <- struct{}{}:
	default:
	}
}
