package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/internal/ttlcache"
	"docflow/streams"
)

// Topics and groups of the delivery core.
const (
	// TopicAttempts carries "attempt delivery N now" messages: retries
	// that are due and redeliveries asked for by an admin.
	TopicAttempts = "docflow.deliveries"
	// DefaultGroupID is the consumer group of the events and attempts
	// topics; the delay relay's group is DefaultGroupID + "-delay".
	DefaultGroupID = "docflow-deliveries"

	retryTopicPrefix = "docflow.deliveries.retry."
)

// RetryTopic names the delay topic of a retry tier.
func RetryTopic(t streams.RetryTier) string { return retryTopicPrefix + t.Name }

// Store is what the delivery core reads and writes
// (postgres.WebhookStore).
type Store interface {
	// Fanout records ev's deliveries, once per (event, subscriber), and
	// returns those whose first attempt is to be made now: not the ones
	// attempted, nor those postponed to later (the message that
	// postponed them brings them back), so a copy of an event never
	// starts an attempt early.
	Fanout(ctx context.Context, ev docflow.Event) ([]docflow.EventDelivery, error)
	Delivery(ctx context.Context, id int64) (*docflow.EventDelivery, error)
	Target(ctx context.Context, sub docflow.Subscriber) (docflow.DeliveryTarget, error)
	RecordAttempt(ctx context.Context, sub docflow.Subscriber, a docflow.DeliveryAttempt, retry *docflow.OutboxMessage) (bool, error)
	DropDelivery(ctx context.Context, id int64, reason string) error
	// Postpone sets a pending delivery's next attempt to due and writes
	// m, which brings it back then, in one transaction.
	Postpone(ctx context.Context, id int64, due time.Time, m docflow.OutboxMessage) error
}

// Result is the outcome of one attempt (docflow.DeliveryResult, which the
// senders in integrations/ return).
type Result = docflow.DeliveryResult

// Sender makes one attempt of a delivery to its target. It must return
// once ctx is done.
type Sender interface {
	Send(ctx context.Context, t docflow.DeliveryTarget, d *docflow.EventDelivery) Result
}

// Config configures a Service.
type Config struct {
	Actors      *actor.Engine
	Brokers     []string
	Store       Store
	Settings    docflow.SettingsStore
	Senders     map[string]Sender // by subscriber kind
	Publisher   streams.Publisher // dead letters and the delay relay's publishes
	Log         zerolog.Logger
	GroupID     string          // DefaultGroupID when empty
	RetryDelays []time.Duration // default WEBHOOK_RETRY_DELAYS
	Jitter      float64         // default 0.2
	Partitions  int             // of the topics it creates; default streams.DefaultPartitions
	// Timeout bounds one attempt; default WEBHOOK_TIMEOUT, read at each
	// attempt.
	Timeout time.Duration
	// PerSubscriber is how many attempts to one subscriber run at once.
	// Default WEBHOOK_CONCURRENCY, read as each actor takes a message.
	PerSubscriber int
	// MaxQueue is how many attempts may wait for a subscriber that is
	// failing (its latest attempt failed) or slow (its latest attempt took
	// StallAfter/4 or more and the head of its queue has waited
	// StallAfter); none wait for a stalled one (an attempt unanswered for
	// StallAfter). The others are
	// postponed to a retry tier (no attempt counted: the first, then, for
	// an attempt postponed again, the next; Service.postponement), so such a
	// receiver holds neither memory nor the consumer's in-flight budget
	// and only ever delays itself. Default 64.
	MaxQueue int
	// StallAfter is how long an attempt may go unanswered before its
	// subscriber counts as stalled. Default 2 s.
	StallAfter time.Duration
	// TargetTTL is how long a subscriber's target read from the store is
	// used again (a burst reads each once, not once per event). Default
	// 200 ms; a deleted or deactivated subscriber stops receiving within it.
	TargetTTL time.Duration
	// Consumer adjusts both consumers' configuration (tests shorten the
	// group timings).
	Consumer func(*streams.ConsumerConfig)
	// Metrics receives one docflow.MetricDelivery per attempt (nil: none).
	Metrics Metrics
}

// Metrics is what the delivery core asks of the analytics recorder:
// Record must not block (recorders batch off the hot path).
type Metrics interface {
	Record(m docflow.Metric)
}

// Service runs the delivery consumers and the subscribers' actors.
type Service struct {
	cfg   Config
	log   zerolog.Logger
	tiers []streams.RetryTier

	consumer, delay *streams.Consumer
	relay           *streams.DelayRelay

	mu     sync.Mutex
	actors map[string]*actor.PID

	batch   *attemptWriter // nil: the store records one attempt at a time
	fanouts chan struct{}
	targets *ttlcache.Cache[docflow.Subscriber, docflow.DeliveryTarget]
	// peakQueue is the longest queue any subscriber's actor held.
	peakQueue atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	// goes are the goroutines the service and its actors start, which
	// Close waits for; once it waits, they start no more.
	goes actors.Group
	once sync.Once
}

// New checks cfg and builds the consumers; Start runs them.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Actors == nil:
		return nil, errors.New("new delivery: nil actor engine")
	case len(cfg.Brokers) == 0:
		return nil, errors.New("new delivery: no brokers")
	case cfg.Store == nil || cfg.Settings == nil || cfg.Publisher == nil:
		return nil, errors.New("new delivery: store, settings and publisher are required")
	case len(cfg.Senders) == 0:
		return nil, errors.New("new delivery: no senders")
	}
	if cfg.GroupID == "" {
		cfg.GroupID = DefaultGroupID
	}
	if cfg.RetryDelays == nil {
		if err := docflow.WebhookRetryDelays.Validate(cfg.Settings); err != nil {
			return nil, fmt.Errorf("new delivery: %w", err)
		}
		cfg.RetryDelays = docflow.WebhookRetryDelays.Get(cfg.Settings)
	}
	if cfg.Jitter <= 0 {
		cfg.Jitter = 0.2
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = 64
	}
	if cfg.StallAfter <= 0 {
		cfg.StallAfter = 2 * time.Second
	}
	if cfg.TargetTTL <= 0 {
		cfg.TargetTTL = 200 * time.Millisecond
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = streams.DefaultPartitions
	}
	s := &Service{cfg: cfg, log: cfg.Log.With().Str("component", "delivery").Logger(),
		tiers: streams.RetryTiersFor(cfg.RetryDelays...), actors: map[string]*actor.PID{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.targets = ttlcache.New[docflow.Subscriber, docflow.DeliveryTarget](targetCacheSize, cfg.TargetTTL, nil)
	s.fanouts = make(chan struct{}, 8)
	if bs, ok := cfg.Store.(BatchStore); ok {
		s.batch = newAttemptWriter(s, bs)
	}
	s.relay = streams.NewDelayRelay(s.ctx, cfg.Publisher, s.log, time.Now, "delivery")

	main := streams.ConsumerConfig{Brokers: cfg.Brokers, GroupID: cfg.GroupID,
		Topics: []string{streams.TopicEvents, TopicAttempts}, Step: "delivery",
		DeadLetters: cfg.Publisher, MaxInFlight: 4096, MaxInFlightPerPartition: 1024, Log: cfg.Log}
	delay := streams.ConsumerConfig{Brokers: cfg.Brokers, GroupID: cfg.GroupID + "-delay",
		Topics: s.retryTopics(), Step: "delivery-delay", DeadLetters: cfg.Publisher,
		MaxInFlight: 8192, MaxInFlightPerPartition: 2048, Log: cfg.Log}
	if cfg.Consumer != nil {
		cfg.Consumer(&main)
		cfg.Consumer(&delay)
	}
	main.Handler, delay.Handler = s.handle, s.relay.Handle
	var err error
	if s.consumer, err = streams.NewConsumer(main); err != nil {
		s.cancel() // ends the delay relay's goroutine
		return nil, fmt.Errorf("new delivery: %w", err)
	}
	if len(delay.Topics) > 0 {
		if s.delay, err = streams.NewConsumer(delay); err != nil {
			s.cancel()
			return nil, fmt.Errorf("new delivery: %w", err)
		}
	}
	return s, nil
}

// perSubscriber is how many attempts to one subscriber may run at once:
// Config.PerSubscriber, else WEBHOOK_CONCURRENCY.
func (s *Service) perSubscriber() int {
	if s.cfg.PerSubscriber > 0 {
		return s.cfg.PerSubscriber
	}
	return max(docflow.WebhookConcurrency.Get(s.cfg.Settings), 1)
}

func (s *Service) retryTopics() []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range s.tiers {
		if n := RetryTopic(t); !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Topics lists the topics the service needs besides the events topic.
func (s *Service) Topics() []string {
	return append([]string{TopicAttempts}, s.retryTopics()...)
}

// Start creates the topics it lacks and joins the consumer groups.
func (s *Service) Start(ctx context.Context) error {
	if s.batch != nil {
		s.goes.Go(s.log, "delivery attempt batches", s.batch.run)
	}
	if err := streams.EnsureNamedTopics(ctx, s.cfg.Brokers, s.cfg.Partitions, s.Topics()...); err != nil {
		return fmt.Errorf("start delivery: %w", err)
	}
	if s.delay != nil {
		if err := s.delay.Start(); err != nil {
			return fmt.Errorf("start delivery delay relay: %w", err)
		}
	}
	if err := s.consumer.Start(); err != nil {
		return fmt.Errorf("start delivery: %w", err)
	}
	return nil
}

// Close stops fetching, lets the attempts under way finish until ctx is
// done (the rest are made again by the next owner), commits and leaves the
// groups.
func (s *Service) Close(ctx context.Context) error {
	var errs []error
	s.once.Do(func() {
		errs = append(errs, s.consumer.Close(ctx))
		s.cancel()
		if s.delay != nil {
			errs = append(errs, s.delay.Close(ctx))
		}
		done := make(chan struct{})
		go func() { s.goes.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
		s.mu.Lock()
		pids := make([]*actor.PID, 0, len(s.actors))
		for _, p := range s.actors {
			pids = append(pids, p)
		}
		s.mu.Unlock()
		// The actors hold only queues by now: a short wait of their own,
		// whatever is left of ctx.
		pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, p := range pids {
			<-s.cfg.Actors.PoisonCtx(pctx, p).Done()
		}
	})
	return errors.Join(errs...)
}

// attemptMsg is the payload of TopicAttempts and of the delay topics.
type attemptMsg struct {
	DeliveryID int64 `json:"delivery_id"`
	Attempt    int   `json:"attempt"` // the attempt this message asks for
	// Postponed counts the times in a row the attempt was postponed
	// without being made (Service.postponement); absent in the others.
	Postponed int `json:"postponed,omitempty"`
	// Due is when a retry or postponement message was due (Unix ms),
	// the delivery's next_attempt when it was written; absent in a
	// redelivery's. A message due before the delivery's next attempt was
	// overtaken by a later postponement (stale).
	Due int64 `json:"due,omitempty"`
}

// AttemptMessage is the outbox message asking for attempt number attempt
// of delivery id now (a redelivery): postgres.AttemptEncoder.
func AttemptMessage(id int64, attempt int) (docflow.OutboxMessage, error) {
	return attemptMessage(attemptMsg{DeliveryID: id, Attempt: attempt})
}

// attemptMessage is the message of TopicAttempts carrying m.
func attemptMessage(m attemptMsg) (docflow.OutboxMessage, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return docflow.OutboxMessage{}, err
	}
	return docflow.OutboxMessage{Topic: TopicAttempts, Key: strconv.FormatInt(m.DeliveryID, 10), Payload: b}, nil
}

// retryMessage puts attempt number attempt of delivery id on tier's delay
// topic, due at due; postponed is the attempt's count of postponements in
// a row (0 after an attempt made).
func retryMessage(id int64, attempt, postponed int, tier streams.RetryTier, due time.Time) (docflow.OutboxMessage, error) {
	m, err := attemptMessage(attemptMsg{DeliveryID: id, Attempt: attempt, Postponed: postponed, Due: due.UnixMilli()})
	if err != nil {
		return m, err
	}
	m.Topic = RetryTopic(tier)
	m.Headers = map[string]string{
		streams.HeaderDueAt:       strconv.FormatInt(due.UnixMilli(), 10),
		streams.HeaderTargetTopic: TopicAttempts,
	}
	return m, nil
}

// next returns the tier and jittered delay after failed attempt n, or
// false when n was the last.
func (s *Service) next(n int) (streams.RetryTier, time.Duration, bool) {
	if n < 1 || n > len(s.tiers) {
		return streams.RetryTier{}, 0, false
	}
	t := s.tiers[n-1]
	f := 1 + s.cfg.Jitter*(2*rand.Float64()-1)
	return t, time.Duration(float64(t.Delay) * f), true
}

// handle runs on a fetch goroutine of the main consumer.
func (s *Service) handle(d *streams.Delivery) {
	switch d.Message.Topic {
	case TopicAttempts:
		var m attemptMsg
		if err := json.Unmarshal(d.Message.Value, &m); err != nil || m.DeliveryID <= 0 {
			d.Nack(streams.Poison(fmt.Errorf("attempt message: %v", err)))
			return
		}
		s.goes.Go(s.log, "delivery attempt load", func() {
			del, ok := s.load(m.DeliveryID)
			if !ok {
				return // stopping: unacknowledged, made again by the next owner
			}
			if del == nil {
				d.Ack()
				return
			}
			if stale(m, del) {
				s.log.Debug().Int64("delivery", del.ID).Int("attempt", m.Attempt).Time("due", time.UnixMilli(m.Due)).
					Time("next_attempt", del.NextAttempt).Msg("attempt message overtaken by a later postponement: dropped")
				d.Ack()
				return
			}
			s.submit(&job{d: del, attempt: m.Attempt, postponed: m.Postponed, done: d.Ack})
		})
	default:
		ev, ok, err := deliverableEvent(d.Message.Value)
		switch {
		case err != nil:
			d.Nack(err)
		case !ok:
			d.Ack()
		default:
			// A few fan-outs at a time: a burst of events must not take
			// every connection of the store's pool from the attempts'
			// batches. The slot is taken here, on the partition's fetch
			// goroutine, so that a backlog of events waits in its
			// partition rather than as goroutines holding decoded events
			// (up to MaxInFlight of them, tens of MiB).
			select {
			case s.fanouts <- struct{}{}:
			case <-s.ctx.Done():
				return // stopping: unacknowledged, made again by the next owner
			}
			s.goes.Go(s.log, "delivery fan-out", func() { s.fanout(ev, d.Ack) })
		}
	}
}

// deliverableEvent decodes an event delivered outside; ok is false for
// anything else on the topic (internal events). Errors are poison.
func deliverableEvent(b []byte) (docflow.Event, bool, error) {
	env, err := streams.DecodeEnvelope(b)
	if err != nil {
		return docflow.Event{}, false, err
	}
	if env.Type != streams.TypeEvent {
		return docflow.Event{}, false, nil
	}
	_, ev, err := streams.Decode[streams.Event](b)
	if err != nil {
		return docflow.Event{}, false, err
	}
	if !docflow.IsDeliverable(ev.Name) {
		return docflow.Event{}, false, nil
	}
	if ev.ID == "" {
		return docflow.Event{}, false, streams.Poison(fmt.Errorf("event %s without an id", ev.Name))
	}
	return docflow.Event(ev), true, nil
}

// fanout records ev's deliveries and submits them; ack runs once all are
// resolved. It runs holding a slot of s.fanouts (taken by handle) and
// gives it back once the deliveries are recorded. While the store is
// unreachable it retries with back-off; a stopping service leaves the
// event unacknowledged.
func (s *Service) fanout(ev docflow.Event, ack func()) {
	var ds []docflow.EventDelivery
	ok := s.retry("fan out "+ev.ID, func(ctx context.Context) (err error) {
		ds, err = s.cfg.Store.Fanout(ctx, ev)
		return err
	})
	<-s.fanouts
	if !ok {
		return
	}
	s.submitAll(ds, ack)
}

// submitAll submits deliveries ds; ack runs once all are resolved.
func (s *Service) submitAll(ds []docflow.EventDelivery, ack func()) {
	if len(ds) == 0 {
		ack()
		return
	}
	var left atomic.Int64
	left.Store(int64(len(ds)))
	resolved := func() {
		if left.Add(-1) == 0 {
			ack()
		}
	}
	for i := range ds {
		s.submit(&job{d: &ds[i], done: resolved})
	}
}

// stale reports whether attempt message m was overtaken by a later
// postponement of its delivery d: written for a time before d's next
// attempt, it is a copy the consumer got again (its process stopped after
// postponing the attempt but before acknowledging what asked for it), and
// the postponement's own message brings the attempt when it is due. Both
// times are the one the postponing process wrote into the row and the
// message, so no two clocks are compared.
func stale(m attemptMsg, d *docflow.EventDelivery) bool {
	return m.Due > 0 && !d.NextAttempt.IsZero() && d.NextAttempt.UnixMilli() > m.Due
}

// load reads delivery id; nil when it is gone. ok is false when the
// service stopped first.
func (s *Service) load(id int64) (d *docflow.EventDelivery, ok bool) {
	ok = s.retry("load delivery", func(ctx context.Context) error {
		var err error
		d, err = s.cfg.Store.Delivery(ctx, id)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			d, err = nil, nil
		}
		return err
	})
	return d, ok
}

// retry runs fn until it succeeds (true) or the service stops (false),
// backing off from 200 ms to 5 s.
func (s *Service) retry(what string, fn func(ctx context.Context) error) bool {
	backoff := 200 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return true
		}
		if s.ctx.Err() != nil {
			return false
		}
		s.log.Warn().Err(err).Msg(what)
		select {
		case <-time.After(backoff):
		case <-s.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
