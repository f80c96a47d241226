// Package alerts tells the admins when an integration has been failing for
// longer than INTEGRATION_FAILING_NOTIFY_AFTER (default one hour).
//
// One long-lived actor per worker process ("alerts/<id>") is ticked by the
// engine's scheduler (SendRepeat) every Config.Tick. On a tick it claims,
// off the actor, the active integrations failing that long whose admins
// were not told yet, through its Store: the claim marks them notified and
// records each one's integration.failing notification for the delivery
// core (subscriber "admin", sent through NOTIFICATION_URLS and retried like
// any delivery) in the same transaction. Several processes claim side by
// side without claiming one failure twice. When the integration recovers
// (its last_error cleared) the mark goes with it, so its next failure is
// notified again.
package alerts

import (
	"context"
	"errors"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
)

// Store claims the failures to notify (postgres.IntegrationAlertStore).
type Store interface {
	// ClaimFailingIntegrations claims up to limit active integrations
	// failing for at least after and not notified yet, and records their
	// admin notifications, in one transaction.
	ClaimFailingIntegrations(ctx context.Context, after time.Duration, limit int) ([]docflow.FailingIntegration, error)
}

// Config configures the alerts actor.
type Config struct {
	Store    Store
	Settings docflow.SettingsStore
	// Tick is how often it looks (default one minute: a failure is
	// notified at most a tick after its threshold).
	Tick time.Duration
	// Batch is how many failures one claim takes (default 100); a tick
	// claims batches until none is left.
	Batch int
	// Timeout bounds one tick's claims (default 30 s).
	Timeout time.Duration
	Log     zerolog.Logger
}

func (c *Config) defaults() error {
	if c.Store == nil || c.Settings == nil {
		return errors.New("alerts: Store and Settings are required")
	}
	if c.Tick <= 0 {
		c.Tick = time.Minute
	}
	if c.Batch <= 0 {
		c.Batch = 100
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	return nil
}

// Spawn spawns the alerts actor (kind "alerts", id id). Poisoning it stops
// the ticks; a claim under way ends with its context.
func Spawn(e *actor.Engine, id string, cfg Config) (*actor.PID, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	log := cfg.Log.With().Str("component", "alerts").Logger()
	return e.Spawn(func() actor.Receiver { return &alerter{cfg: cfg, log: log} },
		"alerts", actors.SpawnOpts(log, actor.WithID(id))...), nil
}

// alerter is the actor; its fields are touched by its receive only.
type alerter struct {
	cfg      Config
	log      zerolog.Logger
	repeater *actor.SendRepeater
	ctx      context.Context
	cancel   context.CancelFunc
	claiming bool
}

// Messages of the actor.
type (
	tick    struct{}
	claimed struct {
		failing []docflow.FailingIntegration
		err     error
	}
)

func (a *alerter) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		r := c.Engine().SendRepeat(c.PID(), tick{}, a.cfg.Tick)
		a.repeater = &r
		a.claim(c) // a process started long after a failure tells at once
	case tick:
		a.claim(c)
	case claimed:
		a.claiming = false
		a.report(m)
	case actor.Stopped:
		if a.repeater != nil {
			a.repeater.Stop()
		}
		if a.cancel != nil {
			a.cancel()
		}
	}
}

// claim starts one round of claims on a goroutine of its own (a query must
// not hold the actor), unless one is under way or no admin channel is
// configured: without one there is no one to tell, and the failures wait,
// unclaimed, for a channel.
// errClaimPanicked reports a claim that ended in a panic.
var errClaimPanicked = errors.New("claim of failing integrations panicked")

func (a *alerter) claim(c *actor.Context) {
	if a.claiming || a.ctx.Err() != nil || len(docflow.NotificationURLs.Get(a.cfg.Settings)) == 0 {
		return
	}
	after := docflow.IntegrationFailingNotifyAfter.Get(a.cfg.Settings)
	a.claiming = true
	e, self, store, batch := c.Engine(), c.PID(), a.cfg.Store, a.cfg.Batch
	ctx, cancel := context.WithTimeout(a.ctx, a.cfg.Timeout)
	actors.Go(a.log, "integration alerts claim", func() {
		defer cancel()
		var all []docflow.FailingIntegration
		// The actor hears of the claim whatever happens, a panic included.
		err := errClaimPanicked
		defer func() { e.Send(self, claimed{failing: all, err: err}) }()
		for {
			var got []docflow.FailingIntegration
			got, err = store.ClaimFailingIntegrations(ctx, after, batch)
			all = append(all, got...)
			if err != nil || len(got) < batch {
				return
			}
		}
	})
}

func (a *alerter) report(m claimed) {
	for _, f := range m.failing {
		a.log.Warn().Int64("integration", f.ID).Str("name", f.Name).Str("type", f.IntegrationType).
			Str("owner", f.OwnerID).Time("failing_since", f.FailingSince).Str("error", f.LastError).
			Msg("integration failing: admins notified")
	}
	if m.err != nil && !errors.Is(m.err, context.Canceled) {
		a.log.Warn().Err(m.err).Msg("claim failing integrations (tried again at the next tick)")
	}
}
