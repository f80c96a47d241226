package sources

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/integrations/imap"
)

// source is the actor of one leased IMAP source. It owns the source's
// status and cursor; the IMAP client belongs to its integration actor,
// which it asks to poll by Call. Its receive never waits: polls run on the
// integration actor, reports are written from a goroutine.
type source struct {
	cfg Config
	log zerolog.Logger
	sup *actor.PID // the supervisor, asked to scan when the settings changed
	in  *docflow.Integration
	// generation is the settings' generation of the claim: storage takes
	// mail in only under the current one.
	generation int64
	imap       imap.Config
	cfgErr     error
	cursor     docflow.MailCursor
	status     docflow.IntegrationStatus
	lastEr     string

	self  *actor.PID
	e     *actor.Engine
	conn  *actor.PID // the integration actor
	busy  bool       // a poll Call is in flight
	again bool       // a wake-up came during it
	gen   int        // bumped by reconfigure: a stale poll's cursor is dropped

	saving, dirty bool
	usedAt        *time.Time
	ticker        *time.Timer // sends the next tick
}

// Source messages.
type (
	reconfigure struct{ claim docflow.SourceClaim }
	// wake asks for a poll (a tick, new mail while idling, a closed
	// connection).
	wake struct{}
	tick struct{ gen int }
	// stateChanged is the integration actor's state.
	stateChanged struct {
		state actors.IntegrationState
		err   error
	}
	polled struct {
		gen int
		res imap.PollResult
		err error
	}
	saved struct{ err error }
)

func newSource(cfg Config, cl docflow.SourceClaim, sup *actor.PID) *source {
	s := &source{cfg: cfg, sup: sup, log: cfg.Log.With().Int64("integration", cl.Integration.ID).Logger()}
	s.load(cl)
	return s
}

// load takes a claim's record: its configuration, its saved status and
// cursor.
func (s *source) load(cl docflow.SourceClaim) {
	s.in = cl.Integration
	s.generation = cl.Generation
	s.cursor = cl.Cursor
	s.status = cl.Integration.Status
	s.imap, s.cfgErr = imap.ParseConfig(cl.Integration)
	if s.cfgErr == nil && s.cfg.IOTimeout > 0 {
		s.imap.IOTimeout = s.cfg.IOTimeout
	}
	s.imap.Dial = s.cfg.Dial
	if s.cfgErr == nil && cl.Integration.LastError != nil && len(cl.Integration.Credentials) == 0 {
		s.cfgErr = errors.New(*cl.Integration.LastError)
	}
}

func (s *source) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Started:
		s.self, s.e = c.PID(), c.Engine()
		s.status.State = "connecting"
		s.start()
	case actor.Stopped:
		if s.ticker != nil {
			s.ticker.Stop()
		}
		if s.conn != nil {
			s.e.Poison(s.conn)
		}
	case reconfigure:
		s.gen++
		s.load(m.claim)
		if s.conn != nil {
			s.e.Poison(s.conn)
			s.conn = nil
		}
		s.busy = false
		s.start()
	case tick:
		if m.gen == s.gen {
			s.poll()
			s.schedule()
		}
	case wake:
		s.poll()
	case stateChanged:
		s.status.State = string(m.state)
		if m.err != nil {
			// The integration actor logs the cause; users see its class.
			s.lastEr = imap.Describe(m.err)
		}
		if m.state == actors.IntegrationConnected {
			s.lastEr = ""
			s.poll()
		}
		s.save()
	case polled:
		s.donePoll(m)
	case saved:
		s.saving = false
		if m.err != nil && docflow.ErrorCode(m.err) != docflow.ENOTFOUND {
			s.log.Warn().Err(m.err).Msg("sources: save status")
		}
		if s.dirty {
			s.save()
		}
	}
}

// start spawns the integration actor that owns the client, or records why
// the configuration cannot run.
func (s *source) start() {
	if s.cfgErr != nil {
		s.status.State = string(actors.IntegrationFailed)
		s.lastEr = s.cfgErr.Error()
		s.log.Warn().Err(s.cfgErr).Msg("sources: configuration refused")
		s.save()
		return
	}
	e, self := s.e, s.self
	pid, err := actors.SpawnIntegration(e, actors.IntegrationConfig[imap.Config, *imap.Client]{
		Name:   fmt.Sprintf("imap-%d-%d", s.in.ID, s.gen),
		Config: s.imap,
		New: func(cfg imap.Config) (*imap.Client, error) {
			return imap.New(cfg, func() { e.Send(self, wake{}) })
		},
		InitialBackoff: s.cfg.InitialBackoff,
		MaxBackoff:     s.cfg.MaxBackoff,
		ConnectTimeout: s.imap.DialTimeout + s.imap.IOTimeout,
		CallTimeout:    s.cfg.CallTimeout,
		OnState:        func(st actors.IntegrationState, err error) { e.Send(self, stateChanged{st, err}) },
		Log:            s.log,
	})
	if err != nil {
		s.lastEr = err.Error()
		s.save()
		return
	}
	s.conn = pid
	s.schedule()
}

// schedule sends the next tick after the poll interval: polling where the
// server lacks IDLE, and a check of the connection where it idles.
func (s *source) schedule() {
	if s.ticker != nil {
		s.ticker.Stop() // a reconfigured source's ticks start again
	}
	e, self, gen := s.e, s.self, s.gen
	s.ticker = time.AfterFunc(s.imap.PollInterval, func() { e.Send(self, tick{gen: gen}) })
}

// poll asks the integration actor to poll, unless a poll is in flight (it
// runs again after).
func (s *source) poll() {
	if s.conn == nil {
		return
	}
	if s.busy {
		s.again = true
		return
	}
	s.busy, s.again = true, false
	e, self, gen, cur := s.e, s.self, s.gen, s.cursor
	budget, log := s.cfg.PollBudget, s.log
	sk := &sink{store: s.cfg.Store, intake: s.cfg.Intake, in: s.in, generation: s.generation}
	var res imap.PollResult
	rec, target := s.cfg.Recorder, strconv.FormatInt(s.in.ID, 10)
	s.e.Send(s.conn, &actors.Call[*imap.Client]{
		Do: func(ctx context.Context, k *imap.Client) error {
			var err error
			start := time.Now()
			res, err = k.Poll(ctx, cur, sk, budget, log)
			if rec != nil {
				// The poll alone: the IDLE wait after it is not work.
				rec.Record(docflow.IntegrationMetric(docflow.MetricTypeIMAP, docflow.DirectionIn, target, start, sk.bytes.Load(), err))
			}
			if err == nil && !res.More {
				err = k.Idle(ctx)
			}
			if imap.IsConnection(err) {
				return actors.Disconnected(err)
			}
			return err
		},
		Done: func(err error) { e.Send(self, polled{gen: gen, res: res, err: err}) },
	})
}

func (s *source) donePoll(m polled) {
	if m.gen != s.gen {
		return
	}
	s.busy = false
	if errors.Is(m.err, actors.ErrNotConnected) {
		return // the connected state asks for the next poll
	}
	now := time.Now().UTC()
	s.status.LastPollAt = &now
	s.status.MessagesSeen += int64(m.res.Seen)
	s.status.DocumentsIngested += int64(m.res.Ingested)
	if m.res.Ingested > 0 {
		s.usedAt = &now
	}
	s.cursor = m.res.Cursor
	if m.err != nil {
		if docflow.ErrorCode(m.err) == docflow.ENOTFOUND {
			// The integration is gone, inactive or changed: storage took
			// nothing in, and the supervisor stops or reconfigures this
			// source at the scan asked for now.
			s.log.Info().Err(m.err).Msg("sources: settings changed; mail left for the source that runs under them")
			if s.sup != nil {
				s.e.Send(s.sup, rescan{})
			}
			return
		}
		s.lastEr = imap.Describe(m.err)
		s.log.Warn().Err(m.err).Msg("sources: poll failed")
	} else {
		s.lastEr = ""
	}
	s.save()
	if m.err == nil && (m.res.More || s.again) {
		s.poll()
	}
}

// save writes the status off the actor, one write at a time (the latest
// status wins).
func (s *source) save() {
	if s.saving {
		s.dirty = true
		return
	}
	s.saving, s.dirty = true, false
	id, owner, store := s.in.ID, s.cfg.Owner, s.cfg.Store
	r := docflow.SourceReport{Status: s.status, Cursor: s.cursor, LastError: s.lastEr, UsedAt: s.usedAt, Generation: s.generation}
	s.usedAt = nil
	e, self := s.e, s.self
	actors.Go(s.log, "source report", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The actor hears of the write whatever happens, a panic included:
		// otherwise it would never save again.
		err := errSavePanicked
		defer func() { e.Send(self, saved{err: err}) }()
		err = store.SaveSourceReport(ctx, id, owner, r)
	})
}

// errSavePanicked reports a write of a source's report that ended in a
// panic.
var errSavePanicked = errors.New("sources: write of the source's report panicked")
