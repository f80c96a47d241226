// Package destinations delivers documents to their owners' storage
// destinations (DESTINATION integrations: a folder, WebDAV, S3…).
//
// send_to_destinations queues one delivery per active destination in
// PostgreSQL with its task message, in one transaction; the message goes
// to the destinations topic keyed by the integration's id, so every task
// of one integration lands on one partition. A consumer group shares the
// partitions among the workers: the one process that owns a partition runs
// the actors of its integrations, so each integration is delivered to by
// exactly one process at a time, with its own connection, pace and
// backoff; when a worker dies its partitions, with the tasks it had not
// acknowledged, pass to another.
//
// In that process each integration has an actor, destination/<id>, which
// keeps its queue and hands one delivery at a time to the integration's
// client actor (actors.SpawnIntegration: integration/dest-<id>-<generation>,
// which owns the docflow.DestinationClient and its connection). The next
// delivery is prepared, and the last one recorded, while one is sent. Each
// attempt's outcome is recorded in one transaction with the retry's task
// message (due later, through the outbox), and only then acknowledged: a
// process killed mid-upload acknowledged nothing, and the next owner
// delivers again, which overwrites (clients replace what a name held).
// A failed destination is retried alone; the others' deliveries are
// separate tasks.
//
// A task message may come twice (the outbox publishes again after a
// fault): an attempt is claimed in storage with a lease (StartDelivery),
// renewed while this process holds it, so that a delivery under way or
// done is not attempted again; a copy arriving while its task is held
// here is dropped at once, and one whose delivery another process holds
// waits for that claim to end, which it does when the process died
// (claims.go). Each task names the attempt it asks for (the first, or
// the retry's): a copy asking for an attempt storage says was made, one
// that arrives while its delivery waits for the retry, is stale, so a
// task published again never starts an attempt before the retry is due
// nor a second chain of retries.
//
// Goroutines, not actors: the consumer's fetch loops (they hand each
// message to its actor and never wait); per task, the start of its attempt
// in storage (a few at once per integration); per outcome, its recording,
// which waits for its share of a group-committed transaction (two flushers
// per process) and then acknowledges; per reload of an integration, the
// read. The client's calls run on its actor.
//
// A change of a destination (its settings, its active flag, its deletion)
// writes a message on the same partition (a trigger, migration 0600): the
// actor reloads the integration, cancels a delivery under way to a
// destination deleted or deactivated, and cancels what waits for it.
package destinations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/internal/groupcommit"
	"docflow/streams"
)

// Topic carries the destinations' messages, keyed by integration id.
const Topic = streams.TopicDestinations

// DefaultGroupID is the consumer group of Topic.
const DefaultGroupID = "docflow-destinations"

// Message kinds of Topic.
const (
	kindDeliver = "deliver"
	// kindChanged is written by the trigger integrations_destination_changed.
	kindChanged = "changed"
)

// message is the payload of Topic.
type message struct {
	Kind          string `json:"kind"`
	IntegrationID int64  `json:"integration_id"`
	DeliveryID    int64  `json:"delivery_id,omitempty"`
	Request       int64  `json:"request,omitempty"`
	// Attempt is the attempt of the request the task asks for, from 1:
	// a copy asking for an attempt storage says was made is stale
	// (StartDelivery). 0 in tasks written before tasks carried it, which
	// storage starts whatever the attempt.
	Attempt int `json:"attempt,omitempty"`
}

// TaskMessage is the outbox message asking integration integrationID's
// actor to attempt delivery deliveryID of request request, its first
// attempt (postgres.DeliveryTaskEncoder).
func TaskMessage(integrationID, deliveryID, request int64) (docflow.OutboxMessage, error) {
	return taskMessage(integrationID, deliveryID, request, 1)
}

// taskMessage is the task asking for attempt number attempt.
func taskMessage(integrationID, deliveryID, request int64, attempt int) (docflow.OutboxMessage, error) {
	b, err := json.Marshal(message{Kind: kindDeliver, IntegrationID: integrationID, DeliveryID: deliveryID,
		Request: request, Attempt: attempt})
	if err != nil {
		return docflow.OutboxMessage{}, err
	}
	return docflow.OutboxMessage{Topic: Topic, Key: strconv.FormatInt(integrationID, 10), Payload: b}, nil
}

// ChangedMessage tells integration id's actor that its integration
// changed or is gone, as the trigger of migration 0600 does; the system
// reset writes one per destination it removes (TRUNCATE fires no row
// trigger).
func ChangedMessage(id int64) (docflow.OutboxMessage, error) {
	b, err := json.Marshal(message{Kind: kindChanged, IntegrationID: id})
	if err != nil {
		return docflow.OutboxMessage{}, err
	}
	return docflow.OutboxMessage{Topic: Topic, Key: strconv.FormatInt(id, 10), Payload: b}, nil
}

func decode(b []byte) (message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return m, streams.Poison(fmt.Errorf("destination message: %w", err))
	}
	switch {
	case m.IntegrationID <= 0:
		return m, streams.Poison(errors.New("destination message without an integration"))
	case m.Kind == kindDeliver && (m.DeliveryID <= 0 || m.Request <= 0 || m.Attempt < 0):
		return m, streams.Poison(errors.New("delivery task without its delivery and request"))
	case m.Kind != kindDeliver && m.Kind != kindChanged:
		return m, streams.Poison(fmt.Errorf("destination message of unknown kind %q", m.Kind))
	}
	return m, nil
}

// Store is what delivery asks of storage (postgres.DestinationStore).
type Store interface {
	// DestinationIntegration returns the integration with its credentials
	// and its settings' generation; ENOTFOUND when deleted.
	DestinationIntegration(ctx context.Context, id int64) (*docflow.Integration, int64, error)
	// StartDelivery begins attempt number attempt under a claim leased
	// for lease (nil: stale, nothing to do, the attempt made already
	// among others; *docflow.DeliveryClaimedError: another attempt holds
	// the delivery). Attempt 0 starts the next attempt, whichever it is.
	StartDelivery(ctx context.Context, id, integrationID, request int64, attempt int, lease time.Duration) (*docflow.DeliveryTask, error)
	// RenewDeliveryClaims extends the leases of the claims held.
	RenewDeliveryClaims(ctx context.Context, claims []int64, lease time.Duration) error
	// ReleaseDeliveryClaims gives back claims whose attempts were not
	// made.
	ReleaseDeliveryClaims(ctx context.Context, claims []int64) error
	// FinishDelivery records an attempt's outcome with the retry's task
	// message, in one transaction.
	FinishDelivery(ctx context.Context, o docflow.DeliveryOutcome, retry *docflow.OutboxMessage) (bool, error)
	// FinishDeliveries records several outcomes in one transaction (a
	// batch of FinishDelivery).
	FinishDeliveries(ctx context.Context, fs []docflow.DeliveryFinish) ([]bool, error)
	// CancelDeliveries cancels what waits for integration id.
	CancelDeliveries(ctx context.Context, id int64, reason string) (int64, error)
	// RecordIntegrationState reports the integration's connection state,
	// and its last error when not nil.
	RecordIntegrationState(ctx context.Context, id int64, state string, lastError *string) error
}

// Metrics hears one integration metric per attempt; Record must not
// block.
type Metrics interface {
	Record(m docflow.Metric)
}

// Config configures a Service.
type Config struct {
	Actors    *actor.Engine
	Brokers   []string
	Store     Store
	Blobs     docflow.BlobStore
	Factories docflow.DestinationFactories
	Settings  docflow.SettingsStore
	// Publisher takes dead letters (a message that cannot be read).
	Publisher streams.Publisher
	Log       zerolog.Logger
	GroupID   string // DefaultGroupID when empty
	// Partitions of Topic when it is created (streams.DefaultPartitions).
	Partitions int
	// RetryDelays are the waits after failed attempts 1, 2…; after the
	// last the delivery fails. Default DESTINATION_RETRY_DELAYS.
	RetryDelays []time.Duration
	Jitter      float64 // ± fraction of a retry delay; default 0.2
	// Timeout bounds one delivery; default DESTINATION_TIMEOUT.
	Timeout time.Duration
	// ClaimLease is how long an attempt's claim lasts unless renewed
	// (every third of it while the attempt is held): how long a delivery
	// whose process died waits before another takes it over. Default 30 s.
	ClaimLease time.Duration
	// InitialBackoff and MaxBackoff bound a client's reconnects (1 s, 30 s).
	InitialBackoff, MaxBackoff time.Duration
	// Consumer adjusts the consumer's configuration (tests shorten the
	// group timings).
	Consumer func(*streams.ConsumerConfig)
	Metrics  Metrics
	Now      func() time.Time
}

// Service runs the destinations' consumer and actors.
type Service struct {
	cfg      Config
	log      zerolog.Logger
	consumer *streams.Consumer

	mu     sync.Mutex
	actors map[int64]*actor.PID

	// finishes groups the outcomes recorded at once into shared
	// transactions: each integration's outcomes update its row, so apart
	// they would wait for each other's locks and commits.
	finishes *groupcommit.Committer[docflow.DeliveryFinish, bool]

	ctx    context.Context
	cancel context.CancelFunc
	// goes are the goroutines the service and its actors start, which
	// Close waits for; once it waits, they start no more.
	goes actors.Group
	once sync.Once
}

// New checks cfg and builds the consumer; Start runs it.
func New(cfg Config) (*Service, error) {
	switch {
	case cfg.Actors == nil:
		return nil, errors.New("new destinations: nil actor engine")
	case len(cfg.Brokers) == 0:
		return nil, errors.New("new destinations: no brokers")
	case cfg.Store == nil || cfg.Blobs == nil || cfg.Settings == nil || cfg.Publisher == nil:
		return nil, errors.New("new destinations: store, blobs, settings and publisher are required")
	}
	if cfg.GroupID == "" {
		cfg.GroupID = DefaultGroupID
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = streams.DefaultPartitions
	}
	if cfg.RetryDelays == nil {
		if err := docflow.DestinationRetryDelays.Validate(cfg.Settings); err != nil {
			return nil, fmt.Errorf("new destinations: %w", err)
		}
		cfg.RetryDelays = docflow.DestinationRetryDelays.Get(cfg.Settings)
	}
	if cfg.Jitter <= 0 {
		cfg.Jitter = 0.2
	}
	if cfg.ClaimLease <= 0 {
		cfg.ClaimLease = 30 * time.Second
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Factories == nil {
		cfg.Factories = docflow.DestinationFactories{}
	}
	s := &Service{cfg: cfg, log: cfg.Log.With().Str("component", "destinations").Logger(), actors: map[int64]*actor.PID{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.finishes = groupcommit.New(groupcommit.Config[docflow.DeliveryFinish, bool]{Flushers: finishFlushers, Max: 256,
		Flush: s.flushFinishes,
		Key:   func(f docflow.DeliveryFinish) (any, bool) { return f.Outcome.DeliveryID, true }})
	cc := streams.ConsumerConfig{Brokers: cfg.Brokers, GroupID: cfg.GroupID, Topics: []string{Topic},
		Step: "destinations", DeadLetters: cfg.Publisher, MaxInFlight: 4096, MaxInFlightPerPartition: 1024, Log: cfg.Log}
	if cfg.Consumer != nil {
		cfg.Consumer(&cc)
	}
	cc.Handler = s.handle
	var err error
	if s.consumer, err = streams.NewConsumer(cc); err != nil {
		return nil, fmt.Errorf("new destinations: %w", err)
	}
	return s, nil
}

// finishFlushers is how many batches of outcomes are written at once.
const finishFlushers = 2

// flushFinishes writes a batch of outcomes.
func (s *Service) flushFinishes(ctx context.Context, fs []docflow.DeliveryFinish) []groupcommit.Answer[bool] {
	out := make([]groupcommit.Answer[bool], len(fs))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	recorded, err := s.cfg.Store.FinishDeliveries(ctx, fs)
	for i := range out {
		if err != nil {
			out[i].Err = err
		} else {
			out[i].V = recorded[i]
		}
	}
	return out
}

// Start creates the topic if missing and joins the consumer group.
func (s *Service) Start(ctx context.Context) error {
	for range finishFlushers {
		s.goDo(func() { s.finishes.Run(s.ctx) })
	}
	if err := streams.EnsureNamedTopics(ctx, s.cfg.Brokers, s.cfg.Partitions, Topic); err != nil {
		return fmt.Errorf("start destinations: %w", err)
	}
	if err := s.consumer.Start(); err != nil {
		return fmt.Errorf("start destinations: %w", err)
	}
	return nil
}

// Close stops fetching, cancels the deliveries under way (the next owner
// of their partitions makes them again: nothing was acknowledged), waits
// for the outcomes being recorded until ctx is done, commits and leaves
// the group.
func (s *Service) Close(ctx context.Context) error {
	var err error
	s.once.Do(func() {
		s.cancel()
		err = s.consumer.Close(ctx)
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
		pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, p := range pids {
			<-s.cfg.Actors.PoisonCtx(pctx, p).Done()
		}
	})
	return err
}

// timeout is the bound of one delivery now.
func (s *Service) timeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return docflow.Positive(docflow.DestinationTimeout, s.cfg.Settings)
}

// handle runs on a fetch goroutine: it hands the message to its
// integration's actor.
func (s *Service) handle(d *streams.Delivery) {
	m, err := decode(d.Message.Value)
	if err != nil {
		d.Nack(err)
		return
	}
	s.actorOf(m.IntegrationID).send(s.cfg.Actors, &job{d: d, msg: m})
}

// pidRef sends to an actor.
type pidRef struct{ pid *actor.PID }

func (p pidRef) send(e *actor.Engine, msg any) { e.Send(p.pid, msg) }

// actorOf returns integration id's actor, spawned on first use. Actors
// live as long as the service: a partition revoked and assigned again
// finds its actors.
func (s *Service) actorOf(id int64) pidRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pid, ok := s.actors[id]; ok {
		return pidRef{pid}
	}
	pid := s.cfg.Actors.Spawn(newDestinationActor(s, id), "destination",
		actors.SpawnOpts(s.log, actor.WithID(strconv.FormatInt(id, 10)))...)
	s.actors[id] = pid
	return pidRef{pid}
}

// retry runs fn until it succeeds (true) or the service stops (false),
// backing off from 200 ms to 5 s. A panic in fn is recovered and counts
// as a failed try (logged with its stack), so that the actor waiting for
// the outcome is answered and the work is tried again, not left held.
func (s *Service) retry(what string, fn func(ctx context.Context) error) bool {
	backoff := 200 * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(s.ctx, 30*time.Second)
		err := s.try(ctx, what, fn)
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

// try runs fn once, turning a panic into an error.
func (s *Service) try(ctx context.Context, what string, fn func(ctx context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error().Str("panic", fmt.Sprint(r)).Bytes("stack", debug.Stack()).Msg(what + ": recovered")
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn(ctx)
}

// goDo runs fn on a goroutine the service waits for on Close; once Close
// waits, it runs nothing (what fn would do is left for the partition's
// next owner: nothing of it was acknowledged).
func (s *Service) goDo(fn func()) {
	s.goes.Go(s.log, "destinations", fn)
}
