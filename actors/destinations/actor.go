package destinations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/actors"
	"docflow/streams"
)

// job is one message of an integration's partition: a delivery task or a
// change of the integration.
type job struct {
	d    *streams.Delivery
	msg  message
	task *docflow.DeliveryTask // once prepared
	// ctx is the attempt's (while it is sent); cancel ends it with a
	// cause (errGone, errInactive, errLost).
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Why an attempt under way is cancelled.
var (
	errGone     = errors.New("the destination was deleted")
	errInactive = errors.New("the destination was deactivated")
	errLost     = errors.New("this process no longer owns the destination")
)

// Messages of the actor.
type (
	// loaded is the integration read again.
	loaded struct {
		in      *docflow.Integration
		gen     int64
		gone    bool
		refused error // the record cannot be used (credentials sealed under another secret)
		stopped bool
	}
	// prepared is a task started in storage (nil: stale, unless
	// claimed, when another attempt holds it until then).
	prepared struct {
		j       *job
		task    *docflow.DeliveryTask
		claimed time.Time
		stopped bool
	}
	// sent is the end of a delivery's call.
	sent struct {
		j   *job
		res *callResult
		err error
	}
	// clientState is the client actor's connection state.
	clientState struct {
		gen   int64
		state actors.IntegrationState
		err   error
	}
	// lost: a partition this actor had jobs from was revoked.
	lost struct{ ctx context.Context }
	// resume ends a pause.
	resume struct{}
	// cancelled: the deliveries waiting for a deleted or deactivated
	// integration were cancelled; the change messages may be acknowledged.
	cancelled struct{ changes []*job }
)

// callResult is filled by the delivery on the client's actor.
type callResult struct {
	name   string
	remote string
	size   int64
}

// How far ahead of the delivery under way tasks are started.
const (
	prepareAhead  = 8
	prepareAtOnce = 4
)

// destinationActor runs one integration's deliveries in this process:
// one sent at a time (the client's calls never overlap), the next ones
// prepared meanwhile, outcomes recorded on goroutines.
type destinationActor struct {
	s    *Service
	id   int64
	log  zerolog.Logger
	e    *actor.Engine
	self *actor.PID

	in        *docflow.Integration
	gen       int64
	gone      bool
	refused   error
	loading   bool
	reload    bool   // a change came while loading
	changes   []*job // change messages acknowledged once applied
	client    *actor.PID
	clientGen int64
	connErr   error // the client's latest connect failure

	queue     []*job
	preparing int    // tasks being started in storage
	ready     []*job // started, waiting for the client
	sending   *job
	held      map[taskKey]*job // the tasks held, one job each (claims.go)
	waiting   []*job           // tasks claimed elsewhere, asking again later
	paused    time.Time
	resumeSet bool
	watched   map[context.Context]bool
	// renewTimer renews the claims' leases while the actor lives.
	renewTimer *time.Timer
}

func newDestinationActor(s *Service, id int64) actor.Producer {
	return func() actor.Receiver {
		return &destinationActor{s: s, id: id, watched: map[context.Context]bool{}, held: map[taskKey]*job{},
			log: s.log.With().Int64("integration", id).Logger()}
	}
}

func (a *destinationActor) Receive(c *actor.Context) {
	switch m := c.Message().(type) {
	case actor.Initialized:
		a.e, a.self = c.Engine(), c.PID()
		return
	case actor.Started:
		a.e, a.self = c.Engine(), c.PID()
		a.scheduleRenew()
	case actor.Stopped:
		a.stop()
		return
	case *job:
		a.watch(m.d.Owned())
		if m.msg.Kind == kindChanged {
			a.changes = append(a.changes, m)
			a.load()
		} else if a.hold(m) {
			a.queue = append(a.queue, m)
		}
	case loaded:
		a.applyLoaded(m)
	case prepared:
		a.preparing--
		switch {
		case m.stopped || m.j.d.Owned().Err() != nil:
			a.unhold(m.j)
			a.releaseClaims(m.task)
			m.j.d.Release()
		case !m.claimed.IsZero():
			a.wait(m.j, m.claimed)
		case m.task == nil:
			a.unhold(m.j)
			m.j.d.Ack() // stale: delivered, cancelled or asked again since
		default:
			m.j.task = m.task
			a.ready = append(a.ready, m.j)
		}
	case sent:
		a.sending = nil
		a.finish(m.j, m.res, m.err)
	case clientState:
		a.applyState(m)
	case lost:
		a.dropLost(m.ctx)
	case resume:
		a.resumeSet = false
	case renewTick:
		a.renew()
	case requeue:
		a.applyRequeue(m.j)
	case cancelled:
		for _, j := range m.changes {
			j.d.Ack()
		}
	}
	a.pump()
}

// watch arranges for lost once ctx (a partition's ownership) ends.
func (a *destinationActor) watch(ctx context.Context) {
	if a.watched[ctx] {
		return
	}
	a.watched[ctx] = true
	e, self := a.e, a.self
	context.AfterFunc(ctx, func() { e.Send(self, lost{ctx: ctx}) })
}

// pump sends the prepared delivery when nothing is under way and prepares
// the next.
func (a *destinationActor) pump() {
	if a.in == nil && !a.gone && a.refused == nil && !a.loading {
		a.load()
	}
	// The client changes only between calls: a call queued at a client
	// being stopped would never be answered.
	if a.sending == nil && !a.loading {
		switch {
		case a.gone || (a.in != nil && !a.in.IsActive):
			a.stopClient()
		case a.in != nil && a.clientGen != a.gen:
			a.spawnClient()
		}
	}
	known := a.in != nil || a.gone || a.refused != nil
	if a.sending == nil && len(a.ready) > 0 && !a.loading && known {
		if wait := time.Until(a.paused); wait > 0 {
			if !a.resumeSet {
				a.resumeSet = true
				e, self := a.e, a.self
				time.AfterFunc(wait, func() { e.Send(self, resume{}) })
			}
		} else {
			j := a.ready[0]
			a.ready = a.ready[1:]
			a.send(j)
		}
	}
	// NOTE: a few tasks are started ahead, some at once, so that the
	// client never waits for storage between two deliveries.
	for a.preparing < prepareAtOnce && a.preparing+len(a.ready) < prepareAhead && len(a.queue) > 0 {
		j := a.queue[0]
		a.queue = a.queue[1:]
		a.preparing++
		a.s.goDo(func() { a.prepare(j) })
	}
}

// load reads the integration again on a goroutine (loaded).
func (a *destinationActor) load() {
	if a.loading {
		a.reload = true
		return
	}
	a.loading = true
	s, id, e, self := a.s, a.id, a.e, a.self
	s.goDo(func() {
		// The answer is sent from a defer so that a panic here (retry
		// recovers the store's own; the group recovers any other) still
		// ends the loading: the actor would otherwise wait for it for
		// ever. What a panic left is not applied (stopped).
		var m loaded
		answered := false
		defer func() {
			if !answered {
				m = loaded{stopped: true}
			}
			e.Send(self, m)
		}()
		ok := s.retry("load destination integration", func(ctx context.Context) error {
			in, gen, err := s.cfg.Store.DestinationIntegration(ctx, id)
			switch docflow.ErrorCode(err) {
			case "":
				m = loaded{in: in, gen: gen}
			case docflow.ENOTFOUND:
				m = loaded{gone: true}
			case docflow.EINVALID:
				m = loaded{refused: err}
			default:
				return err
			}
			return nil
		})
		m.stopped = !ok
		answered = true
	})
}

func (a *destinationActor) applyLoaded(m loaded) {
	a.loading = false
	if m.stopped {
		return
	}
	a.gone, a.refused = m.gone, m.refused
	a.in, a.gen = m.in, m.gen
	changes := a.changes
	a.changes = nil
	if a.reload {
		a.reload = false
		a.load()
	}
	var why error
	switch {
	case m.gone:
		why = errGone
	case m.in != nil && !m.in.IsActive:
		why = errInactive
	}
	if why != nil {
		if a.sending != nil {
			a.sending.cancel(why)
		}
		s, id, e, self := a.s, a.id, a.e, a.self
		s.goDo(func() {
			s.retry("cancel deliveries", func(ctx context.Context) error {
				_, err := s.cfg.Store.CancelDeliveries(ctx, id, why.Error())
				return err
			})
			e.Send(self, cancelled{changes: changes})
		})
		if a.in != nil {
			a.recordState(actors.IntegrationStopped, nil)
		}
		return
	}
	for _, j := range changes {
		j.d.Ack()
	}
}

// spawnClient replaces the client actor with one for the integration as
// loaded.
func (a *destinationActor) spawnClient() {
	a.stopClient()
	a.connErr = nil
	a.clientGen = a.gen
	factory := a.s.cfg.Factories[a.in.IntegrationType]
	if factory == nil {
		return
	}
	gen, e, self := a.gen, a.e, a.self
	pid, err := actors.SpawnIntegration(e, actors.IntegrationConfig[*docflow.Integration, docflow.DestinationClient]{
		Name:   fmt.Sprintf("dest-%d-%d", a.id, gen),
		Config: a.in,
		New: func(in *docflow.Integration) (docflow.DestinationClient, error) {
			c, err := factory(in)
			if err != nil {
				return nil, docflow.DestFail(docflow.DestInvalid, err.Error(), err)
			}
			return c, nil
		},
		InitialBackoff: a.s.cfg.InitialBackoff,
		MaxBackoff:     a.s.cfg.MaxBackoff,
		CallTimeout:    a.s.timeout(),
		OnState: func(st actors.IntegrationState, cause error) {
			e.Send(self, clientState{gen: gen, state: st, err: cause})
		},
		Log: a.s.cfg.Log,
	})
	if err != nil {
		a.log.Error().Err(err).Msg("spawn destination client")
		return
	}
	a.client = pid
}

func (a *destinationActor) stopClient() {
	if a.client != nil {
		a.e.Poison(a.client)
		a.client = nil
	}
}

func (a *destinationActor) applyState(m clientState) {
	if m.gen != a.clientGen {
		return
	}
	switch m.state {
	case actors.IntegrationConnected:
		a.connErr = nil
	case actors.IntegrationBackingOff, actors.IntegrationFailed:
		if m.err != nil {
			a.connErr = m.err
		}
	}
	a.recordState(m.state, m.err)
}

// recordState reports the connection state (and a connect failure as
// last_error) on a goroutine.
func (a *destinationActor) recordState(st actors.IntegrationState, cause error) {
	var lastErr *string
	if cause != nil && (st == actors.IntegrationBackingOff || st == actors.IntegrationFailed) {
		r := docflow.DestinationReason(cause)
		lastErr = &r
	}
	s, id := a.s, a.id
	s.goDo(func() {
		s.retry("record destination state", func(ctx context.Context) error {
			err := s.cfg.Store.RecordIntegrationState(ctx, id, string(st), lastErr)
			if docflow.ErrorCode(err) == docflow.ENOTFOUND {
				return nil
			}
			return err
		})
	})
}

// prepare starts j's attempt in storage (prepared).
func (a *destinationActor) prepare(j *job) {
	s, e, self := a.s, a.e, a.self
	var task *docflow.DeliveryTask
	var claimed time.Time
	// Sent from a defer, as load's answer: after a panic the job is
	// released (stopped) rather than held for ever.
	ok := false
	defer func() { e.Send(self, prepared{j: j, task: task, claimed: claimed, stopped: !ok}) }()
	ok = s.retry("start delivery", func(ctx context.Context) error {
		var err error
		task, err = s.cfg.Store.StartDelivery(ctx, j.msg.DeliveryID, j.msg.IntegrationID, j.msg.Request, j.msg.Attempt, s.cfg.ClaimLease)
		var ce *docflow.DeliveryClaimedError
		if errors.As(err, &ce) {
			claimed, err = ce.Until, nil
		}
		return err
	})
}

// send hands j to the client actor, or records at once why it cannot go.
func (a *destinationActor) send(j *job) {
	j.ctx, j.cancel = context.WithCancelCause(a.s.ctx)
	if j.d.Owned().Err() != nil {
		j.cancel(errLost)
	}
	switch {
	case a.gone:
		j.cancel(errGone)
	case a.in != nil && !a.in.IsActive:
		j.cancel(errInactive)
	}
	if j.ctx.Err() != nil {
		a.finish(j, &callResult{}, context.Cause(j.ctx))
		return
	}
	var refusal error
	switch {
	case a.refused != nil:
		refusal = docflow.DestFail(docflow.DestInvalid, "the integration's credentials cannot be read: enter them again", a.refused)
	case a.s.cfg.Factories[a.in.IntegrationType] == nil:
		refusal = docflow.DestFail(docflow.DestInvalid, fmt.Sprintf("delivery to %s is not supported yet", a.in.IntegrationType), nil)
	case a.client == nil:
		refusal = docflow.DestFail(docflow.DestUnavailable, "the destination's client could not be started", nil)
	}
	if refusal != nil {
		a.finish(j, &callResult{}, refusal)
		return
	}
	a.sending = j
	in, task, res := a.in, j.task, &callResult{}
	e, self := a.e, a.self
	call := &actors.Call[docflow.DestinationClient]{
		ID: fmt.Sprintf("%d/%d", task.DeliveryID, task.Attempt),
		Do: func(ctx context.Context, k docflow.DestinationClient) error {
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			stop := context.AfterFunc(j.ctx, func() { cancel(context.Cause(j.ctx)) })
			defer stop()
			return a.s.deliver(ctx, k, in, task, res)
		},
		Done: func(err error) { e.Send(self, sent{j: j, res: res, err: err}) },
	}
	e.Send(a.client, call)
	// A call the client actor never answers (it stopped) must not hold
	// the queue: the attempt's context ends it, and the timeout bounds it.
}

// dropLost gives up the jobs of a revoked partition: the next owner gets
// them again.
func (a *destinationActor) dropLost(ctx context.Context) {
	delete(a.watched, ctx)
	keep := func(js []*job, given func(*job)) []*job {
		kept := js[:0]
		for _, j := range js {
			if j.d.Owned() == ctx {
				a.unhold(j)
				given(j)
				j.d.Release()
			} else {
				kept = append(kept, j)
			}
		}
		return kept
	}
	a.queue = keep(a.queue, func(*job) {})
	a.waiting = keep(a.waiting, func(*job) {})
	var unsent []*docflow.DeliveryTask
	a.ready = keep(a.ready, func(j *job) { unsent = append(unsent, j.task) })
	a.releaseClaims(unsent...)
	if a.sending != nil && a.sending.d.Owned() == ctx {
		a.sending.cancel(errLost)
	}
	changes := a.changes[:0]
	for _, j := range a.changes {
		if j.d.Owned() == ctx {
			j.d.Release()
		} else {
			changes = append(changes, j)
		}
	}
	a.changes = changes
}

// stop releases everything: the service is closing.
func (a *destinationActor) stop() {
	if a.sending != nil {
		// Its call's end will find no actor: the next owner makes it again.
		a.sending.cancel(errLost)
		a.sending.d.Release()
	}
	for _, j := range a.queue {
		j.d.Release()
	}
	for _, j := range a.ready {
		j.d.Release()
	}
	for _, j := range a.waiting {
		j.d.Release()
	}
	for _, j := range a.changes {
		j.d.Release()
	}
	a.queue, a.ready, a.waiting, a.changes = nil, nil, nil, nil
	a.held = map[taskKey]*job{}
	if a.renewTimer != nil {
		a.renewTimer.Stop()
	}
	a.stopClient()
}
