// Package sources runs the IMAP sources: one supervisor actor per worker
// process watches the integrations table, leases the active sources in
// PostgreSQL (one process runs each source at a time; each live process
// holds at most its fair share of them; a dead process's sources pass to
// another within a minute), and keeps one source actor per
// leased source, which polls its mailbox through the integration actor that
// owns the IMAP client (actors.SpawnIntegration).
//
// The supervisor ("sources/<owner>") scans every few seconds: it renews
// its leases (integrations.lease_owner, lease_expires_at; an expired lease
// is taken over), holds at most ceil(active sources / live processes
// stamped in source_workers) and sheds its highest ids above that, and
// spawns, reconfigures (on updated_at or the settings' generation) and
// stops one source actor per leased source; a source asks for a scan at
// once when its integration changed. The claim runs on a goroutine and
// comes back as a message. The leases are released when it stops.
//
// A source actor ("source/<integration id>") ticks every poll_interval and
// wakes on new mail (IDLE) or a closed connection; it asks its integration
// actor to poll by Call, keeps the status and the cursor and writes them
// from a goroutine. A poll yields after a few seconds and is asked again,
// so the status stays fresh. Each mail and report is recorded under the
// settings' generation of its claim, which storage fences: a source
// started before a change records nothing after it.
package sources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
)

// Store is what the sources need of storage (postgres.SourceStore).
type Store interface {
	// ClaimSources renews owner's leases for ttl, gives up or takes free
	// or expired ones to hold owner's fair share among the live workers,
	// and returns every active source owner holds.
	ClaimSources(ctx context.Context, owner string, ttl time.Duration) ([]docflow.SourceClaim, error)
	// ReleaseSources gives up owner's leases.
	ReleaseSources(ctx context.Context, owner string) error
	// MailSeen reports whether a mail is finished and which of its
	// attachments were taken in.
	MailSeen(ctx context.Context, integrationID int64, key string) (done bool, attachments []int, err error)
	// MailsDone records finished mails under the settings' generation
	// the source runs under; ENOTFOUND (nothing recorded) once the
	// integration is gone, inactive or changed.
	MailsDone(ctx context.Context, integrationID, generation int64, keys []string) error
	// SaveSourceReport records a source's status, cursor and last error
	// while owner holds its lease and the settings are still of the
	// report's generation.
	SaveSourceReport(ctx context.Context, integrationID int64, owner string, r docflow.SourceReport) error
}

// Intake is the one intake path (intake.Service).
type Intake interface {
	// IngestMail takes one mail attachment in and records seen with it;
	// ECONFLICT when it was taken in before; ENOTFOUND, with nothing
	// recorded, once the integration is gone, inactive or changed since
	// seen.Generation.
	IngestMail(ctx context.Context, u docflow.Upload, seen docflow.MailSeen) (*docflow.IntakeResult, error)
}

// Config configures the supervisor.
type Config struct {
	Store  Store
	Intake Intake
	// Owner names this process in the leases (default host-pid-random).
	Owner string
	// Scan is how often the table is read and the leases renewed (default
	// 5 s); LeaseTTL how long a lease lasts unrenewed (default 30 s): a dead
	// process's sources are taken over within LeaseTTL + Scan.
	Scan, LeaseTTL time.Duration
	// PollBudget bounds one poll's time before it yields (default 5 s: the
	// status is written after each poll);
	// CallTimeout bounds one poll call, however large its mails (default
	// 15 min); InitialBackoff and MaxBackoff bound reconnects (defaults
	// 1 s and 5 min).
	PollBudget, CallTimeout    time.Duration
	InitialBackoff, MaxBackoff time.Duration
	// IOTimeout, when set, overrides the IMAP clients' I/O timeout (tests).
	IOTimeout time.Duration
	// Dial opens the sources' connections (the process's guarded dialer;
	// nil dials directly).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Recorder, when set, hears one integration metric per mailbox poll
	// (type imap, direction in, target the integration id, the attachment
	// bytes taken in, outcome and duration).
	Recorder docflow.Recorder
	Log      zerolog.Logger
}

func (c *Config) defaults() error {
	if c.Store == nil || c.Intake == nil {
		return errors.New("sources: Store and Intake are required")
	}
	if c.Owner == "" {
		host, _ := os.Hostname()
		c.Owner = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if c.Scan <= 0 {
		c.Scan = 5 * time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.PollBudget <= 0 {
		c.PollBudget = 5 * time.Second
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = 15 * time.Minute
	}
	return nil
}

// Spawn spawns the supervisor (kind "sources", id the owner). Poisoning it
// stops every source and gives the leases up.
func Spawn(e *actor.Engine, cfg Config) (*actor.PID, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	log := cfg.Log.With().Str("sources", cfg.Owner).Logger()
	cfg.Log = log
	return e.Spawn(func() actor.Receiver {
		return &supervisor{cfg: cfg, log: log, children: map[int64]*child{}}
	}, "sources", actors.SpawnOpts(log, actor.WithID(cfg.Owner))...), nil
}

// supervisor is the actor; its fields are touched by its receive only.
type supervisor struct {
	cfg      Config
	log      zerolog.Logger
	children map[int64]*child
	scanning bool
	lastOK   time.Time
	stopped  bool
	cancel   context.CancelFunc
	ctx      context.Context
	tick     *time.Timer // sends the next scanTick
}

type child struct {
	pid        *actor.PID
	updated    time.Time
	generation int64
}

// Supervisor messages.
type (
	scanTick struct{}
	// rescan asks for a scan now, out of the timer's turn: a source found
	// its integration changed or gone.
	rescan  struct{}
	scanned struct {
		claims []docflow.SourceClaim
		err    error
	}
)

func (s *supervisor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.lastOK = time.Now()
		s.schedule(c)
		s.scan(c)
	case scanTick:
		s.schedule(c)
		s.scan(c)
	case rescan:
		s.scan(c)
	case scanned:
		s.scanning = false
		s.apply(c, m)
	case actor.Stopped:
		s.stopped = true
		if s.tick != nil {
			s.tick.Stop()
		}
		s.cancel()
		// NOTE: the sources are not waited for: a poll in flight ends within
		// its budget, and a mail it takes in twice is refused by storage.
		s.stopAll(c)
		// Handing the sources over at once spares the others the lease's
		// expiry.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.cfg.Store.ReleaseSources(ctx, s.cfg.Owner); err != nil {
			s.log.Warn().Err(err).Msg("sources: release leases")
		}
	}
}

// schedule sends the next scanTick after the scan interval.
func (s *supervisor) schedule(c *actor.Context) {
	e, pid := c.Engine(), c.PID()
	s.tick = time.AfterFunc(s.cfg.Scan, func() { e.Send(pid, scanTick{}) })
}

// errScanPanicked reports a claim of the leases that ended in a panic.
var errScanPanicked = errors.New("sources: claim of the leases panicked")

// scan claims the leases off the actor (a query must not hold it); a scan
// under way makes it a no-op.
func (s *supervisor) scan(c *actor.Context) {
	e, pid := c.Engine(), c.PID()
	if s.scanning || s.stopped {
		return
	}
	s.scanning = true
	ctx, owner, ttl, store := s.ctx, s.cfg.Owner, s.cfg.LeaseTTL, s.cfg.Store
	actors.Go(s.log, "sources claim", func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var claims []docflow.SourceClaim
		// The actor hears of the scan whatever happens, a panic included:
		// otherwise it would never scan again.
		err := errScanPanicked
		defer func() { e.Send(pid, scanned{claims: claims, err: err}) }()
		claims, err = store.ClaimSources(ctx, owner, ttl)
	})
}

// apply spawns, reconfigures and stops source actors to match the claims.
func (s *supervisor) apply(c *actor.Context, m scanned) {
	if s.stopped {
		return
	}
	if m.err != nil {
		s.log.Warn().Err(m.err).Msg("sources: claim leases")
		if time.Since(s.lastOK) > s.cfg.LeaseTTL {
			// The leases have expired meanwhile: another process may run
			// these sources now.
			s.stopAll(c)
		}
		return
	}
	s.lastOK = time.Now()
	held := map[int64]bool{}
	for _, cl := range m.claims {
		in := cl.Integration
		held[in.ID] = true
		ch, ok := s.children[in.ID]
		switch {
		case !ok:
			sup := c.PID()
			pid := c.Engine().Spawn(func() actor.Receiver { return newSource(s.cfg, cl, sup) },
				"source", actors.SpawnOpts(s.log, actor.WithID(strconv.FormatInt(in.ID, 10)))...)
			s.children[in.ID] = &child{pid: pid, updated: in.UpdatedAt, generation: cl.Generation}
			s.log.Info().Int64("integration", in.ID).Msg("sources: source started")
		case !ch.updated.Equal(in.UpdatedAt) || ch.generation != cl.Generation:
			ch.updated, ch.generation = in.UpdatedAt, cl.Generation
			c.Engine().Send(ch.pid, reconfigure{claim: cl})
			s.log.Info().Int64("integration", in.ID).Msg("sources: source reconfigured")
		}
	}
	for id, ch := range s.children {
		if !held[id] {
			c.Engine().Poison(ch.pid)
			delete(s.children, id)
			s.log.Info().Int64("integration", id).Msg("sources: source stopped")
		}
	}
}

func (s *supervisor) stopAll(c *actor.Context) {
	for id, ch := range s.children {
		c.Engine().Poison(ch.pid)
		delete(s.children, id)
	}
}
