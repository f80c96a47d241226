package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/cenkalti/backoff/v5"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"
)

// Connector is an integration's client, in the shape every integration
// takes: Connect opens the connection (dial, log in), Close releases it.
// The integration's actions are the client's own methods, called through a
// Call message by the actor that owns the client; no other goroutine
// touches it.
type Connector interface {
	Connect(ctx context.Context) error
	Close(ctx context.Context) error
}

// Integration errors.
var (
	// ErrNotConnected is the result of a Call while the client is not
	// connected (connecting, backing off, or stopped).
	ErrNotConnected = errors.New("integration not connected")
	// ErrDisconnected marks an action's error as a lost connection (see
	// Disconnected).
	ErrDisconnected = errors.New("connection lost")
)

// Disconnected wraps an action's error to tell the owning actor that the
// connection is gone: it closes the client and reconnects with backoff.
func Disconnected(err error) error { return fmt.Errorf("%w: %w", ErrDisconnected, err) }

// IntegrationState is where an integration actor stands.
type IntegrationState string

// Integration states.
const (
	IntegrationStopped    IntegrationState = "stopped"     // after Stop, before Start
	IntegrationConnected  IntegrationState = "connected"   // Calls are served
	IntegrationBackingOff IntegrationState = "backing_off" // Connect failed; it is tried again
	IntegrationFailed     IntegrationState = "failed"      // New refused the configuration; waits for Reconfigure
)

// IntegrationConfig configures one integration actor. C is the
// integration's own configuration, K its client.
type IntegrationConfig[C any, K Connector] struct {
	// Name is the actor's id under the kind "integration"; unique per
	// engine (one actor per configured integration).
	Name   string
	Config C
	// New builds a client for a configuration, without I/O. Required.
	New func(cfg C) (K, error)
	// Rate bounds Calls per second (0 = unbounded), with Burst (default 1).
	Rate  rate.Limit
	Burst int
	// InitialBackoff and MaxBackoff bound the waits between failed
	// connects: exponential, ×2, with ±50 % jitter (defaults 1 s, 5 min).
	InitialBackoff, MaxBackoff time.Duration
	// ConnectTimeout bounds one Connect; CallTimeout one Call (defaults 30 s).
	ConnectTimeout, CallTimeout time.Duration
	// OnState, optional, hears every change of state with its cause (for
	// health reports); it is called on the actor and must not block.
	OnState func(IntegrationState, error)
	Log     zerolog.Logger
}

// Messages an integration actor receives.
type (
	// IntegrationStart connects a stopped integration (an integration
	// connects when spawned).
	IntegrationStart struct{}
	// IntegrationStop closes the client; Calls fail with ErrNotConnected
	// until IntegrationStart.
	IntegrationStop struct{}
	// IntegrationReconfigure closes the client, builds one for Config and
	// connects it (unless stopped).
	IntegrationReconfigure[C any] struct{ Config C }
)

// Call asks an integration actor to run Do with its client. The result goes
// to ReplyTo as a CallResult (from an actor: no blocking Request), else to
// Done, called on the integration's actor (it must not block).
type Call[K Connector] struct {
	ID      string // echoed in the CallResult
	Do      func(ctx context.Context, client K) error
	ReplyTo *actor.PID
	Done    func(error)

	e *actor.Engine // set on receipt, for ReplyTo
}

// CallResult is the outcome of a Call sent with a ReplyTo.
type CallResult struct {
	ID  string
	Err error
}

// Fail implements Failer: a panic while handling the call is its result.
func (c *Call[K]) Fail(err error) { c.reply(err) }

func (c *Call[K]) reply(err error) {
	if c.ReplyTo != nil && c.e != nil {
		c.e.Send(c.ReplyTo, CallResult{ID: c.ID, Err: err})
		return
	}
	if c.Done != nil {
		c.Done(err)
	}
}

// SpawnIntegration spawns the recovered, long-lived actor of one
// configured integration: it alone owns the client and its connection, paces
// Calls by the rate limit, and reconnects with jittered exponential backoff
// when Connect fails or an action reports Disconnected. A panic in a Call
// becomes that Call's error (Recover); the actor and its client live on.
// Poisoning the actor closes the client.
func SpawnIntegration[C any, K Connector](e *actor.Engine, cfg IntegrationConfig[C, K]) (*actor.PID, error) {
	switch {
	case e == nil:
		return nil, errors.New("spawn integration: nil engine")
	case cfg.Name == "":
		return nil, errors.New("spawn integration: empty name")
	case cfg.New == nil:
		return nil, fmt.Errorf("spawn integration %s: nil New", cfg.Name)
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 1
	}
	if cfg.Rate == 0 {
		cfg.Rate = rate.Inf
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 5 * time.Minute
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	log := cfg.Log.With().Str("integration", cfg.Name).Logger()
	return e.Spawn(func() actor.Receiver {
		return &integration[C, K]{cfg: cfg, log: log,
			limit: rate.NewLimiter(cfg.Rate, cfg.Burst),
			backoff: &backoff.ExponentialBackOff{InitialInterval: cfg.InitialBackoff, RandomizationFactor: 0.5,
				Multiplier: 2, MaxInterval: cfg.MaxBackoff}}
	}, "integration", SpawnOpts(log, actor.WithID(cfg.Name))...), nil
}

// integration is the actor; its fields are touched only by its receive.
type integration[C any, K Connector] struct {
	cfg     IntegrationConfig[C, K]
	log     zerolog.Logger
	limit   *rate.Limiter
	backoff *backoff.ExponentialBackOff

	client    K
	hasClient bool // client built (it may still be unconnected)
	connected bool
	stopped   bool
	gen       int // bumped by Stop and Reconfigure: stale reconnects are ignored
	state     IntegrationState
	ctx       context.Context // cancelled on actor.Stopped: ends a rate wait
	cancel    context.CancelFunc
	retry     *time.Timer // sends the next reconnect
}

// reconnect is the actor's own timer message.
type reconnect struct{ gen int }

func (a *integration[C, K]) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		a.backoff.Reset()
		a.connect(c)
	case actor.Stopped:
		if a.retry != nil {
			a.retry.Stop()
		}
		if a.cancel != nil {
			a.cancel()
		}
		a.disconnect()
	case IntegrationStart:
		if a.stopped {
			a.stopped = false
			a.gen++
			a.backoff.Reset()
			a.connect(c)
		}
	case IntegrationStop:
		a.stopped = true
		a.gen++
		a.disconnect()
		a.setState(IntegrationStopped, nil)
	case IntegrationReconfigure[C]:
		a.cfg.Config = m.Config
		a.gen++
		a.disconnect()
		a.hasClient = false
		if !a.stopped {
			a.backoff.Reset()
			a.connect(c)
		}
	case reconnect:
		if m.gen == a.gen && !a.stopped && !a.connected {
			a.connect(c)
		}
	case *Call[K]:
		m.e = c.Engine()
		a.call(c, m)
	}
}

// connect builds the client if needed and connects it; on failure it
// schedules the next try after the backoff.
func (a *integration[C, K]) connect(c *actor.Context) {
	if !a.hasClient {
		k, err := a.cfg.New(a.cfg.Config)
		if err != nil {
			// A configuration that cannot build a client waits for the
			// next Reconfigure: retrying cannot help.
			a.log.Error().Err(err).Msg("integration configuration refused")
			a.setState(IntegrationFailed, err)
			return
		}
		a.client, a.hasClient = k, true
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.ConnectTimeout)
	err := a.client.Connect(ctx)
	cancel()
	if err == nil {
		a.connected = true
		a.backoff.Reset()
		a.setState(IntegrationConnected, nil)
		return
	}
	wait := a.backoff.NextBackOff()
	a.log.Warn().Err(err).Dur("retry_in", wait).Msg("integration connect failed")
	a.setState(IntegrationBackingOff, err)
	a.reconnectAfter(c, wait)
}

// reconnectAfter has the timer send a reconnect of the current generation
// after wait.
func (a *integration[C, K]) reconnectAfter(c *actor.Context, wait time.Duration) {
	if a.retry != nil {
		a.retry.Stop() // of an older generation: it would be ignored
	}
	e, pid, gen := c.Engine(), c.PID(), a.gen
	a.retry = time.AfterFunc(wait, func() { e.Send(pid, reconnect{gen: gen}) })
}

// disconnect closes the client if it is connected.
func (a *integration[C, K]) disconnect() {
	if !a.connected {
		return
	}
	a.connected = false
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ConnectTimeout)
	defer cancel()
	if err := a.client.Close(ctx); err != nil {
		a.log.Debug().Err(err).Msg("integration close")
	}
}

func (a *integration[C, K]) call(c *actor.Context, m *Call[K]) {
	if !a.connected {
		m.reply(ErrNotConnected)
		return
	}
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.CallTimeout)
	defer cancel()
	// NOTE: the wait holds this actor only: the integration's pace is its
	// own, and messages behind it wait their turn as they would anyway.
	if err := a.limit.Wait(ctx); err != nil {
		m.reply(fmt.Errorf("integration %s: rate limit: %w", a.cfg.Name, err))
		return
	}
	err := m.Do(ctx, a.client)
	if errors.Is(err, ErrDisconnected) {
		a.disconnect()
		a.setState(IntegrationBackingOff, err)
		a.reconnectAfter(c, a.backoff.NextBackOff())
	}
	m.reply(err)
}

func (a *integration[C, K]) setState(s IntegrationState, cause error) {
	if s == a.state && cause == nil {
		return
	}
	a.state = s
	if a.cfg.OnState != nil {
		a.cfg.OnState(s, cause)
	}
}
