package delivery

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"

	"docflow"
	"docflow/actors"
	"docflow/internal/netguard"
)

// job is one attempt to make: of delivery d, numbered attempt (0: the
// next one). done resolves it (acknowledges what brought it).
type job struct {
	d       *docflow.EventDelivery
	attempt int
	// postponed is how many times in a row this attempt was postponed
	// without being made (its message's count).
	postponed int
	done      func()
	queued    time.Time
	resolved  atomic.Bool
}

// resolve runs done once: a stalled attempt's job is resolved by its
// postponement while the attempt may still end (and record) later.
func (j *job) resolve() {
	if j.resolved.CompareAndSwap(false, true) {
		j.done()
	}
}

// jobDone tells a subscriber's actor that its attempt seq ended after
// took; failed: the receiver failed it.
type jobDone struct {
	seq    uint64
	failed bool
	took   time.Duration
}

// runningJob is an attempt under way; released: its job was postponed
// when it stalled.
type runningJob struct {
	j        *job
	at       time.Time
	released bool
}

// stallCheck asks a subscriber's actor to look at its running attempts
// again (one may have gone unanswered for StallAfter by now).
type stallCheck struct{}

// subscriberActor queues the attempts to one subscriber and runs at most
// its limit (Service.perSubscriber, WEBHOOK_CONCURRENCY) at once (while
// the latest was refused or failed, one probe beside the attempts
// unanswered for StallAfter; an attempt that timed out hung on its own
// event and counts as no refusal), each on a
// goroutine of its own: Receive never waits on a receiver. An attempt
// that hangs holds its slot alone: the others take the queue in turn, so
// a retry or a newer event to a receiver that hangs on some events is
// sent on time. Once every slot is held by an attempt unanswered for
// StallAfter (the subscriber is stalled), the subscriber's whole queue,
// and every job it receives while stalled, is postponed to the first
// delay topic, or a later one for an attempt postponed before (no
// attempt counted; Service.postponement), and its event acknowledged, and
// so are the stalled attempts' jobs (the attempt still records its
// outcome when it ends; the postponed copy is then stale). While it
// fails or is slow (its latest attempt took StallAfter/4 or more and the
// queue's head has waited StallAfter), the queue beyond MaxQueue is
// postponed. A dead or slow receiver thus holds neither memory nor the
// consumer's in-flight window, and only delays itself. A healthy
// receiver's queue is bounded by that window alone.
type subscriberActor struct {
	s       *Service
	seq     uint64
	running map[uint64]*runningJob
	failing bool
	took    time.Duration // of the latest attempt
	armed   bool          // a stallCheck is on its way
	// stallTimer sends the next stallCheck; stopped with the actor.
	stallTimer *time.Timer
	queue      []*job
}

func (a *subscriberActor) Receive(c *actor.Context) {
	now := time.Now()
	switch m := c.Message().(type) {
	case *job:
		a.queue = append(a.queue, m)
		if n := int64(len(a.queue)); n > a.s.peakQueue.Load() {
			a.s.peakQueue.Store(n) // a gauge for tests and the bench; races only lower it
		}
	case jobDone:
		delete(a.running, m.seq)
		a.failing, a.took = m.failed, m.took
	case stallCheck:
		a.armed = false
	case actor.Stopped:
		if a.stallTimer != nil {
			a.stallTimer.Stop()
		}
		return
	default:
		return
	}
	limit := a.s.perSubscriber()
	if len(a.s.tiers) > 0 {
		if a.stalled(now, limit) {
			// Nothing waits behind a stalled attempt, and the stalled
			// attempts' events are let go: the consumer's window moves on.
			for _, r := range a.running {
				if !r.released && now.Sub(r.at) >= a.s.cfg.StallAfter {
					r.released = true
					a.shed(r.j)
				}
			}
			a.shedQueue(0)
		} else if len(a.queue) > a.s.cfg.MaxQueue && a.slow(now) {
			a.shedQueue(a.s.cfg.MaxQueue)
		}
	}
	engine, self := c.Engine(), c.PID()
	if a.failing {
		// A probe at a time while the receiver fails, beside the attempts
		// that hang on their own events.
		limit = min(limit, 1+a.stalledCount(now))
	}
	for len(a.running) < limit && len(a.queue) > 0 {
		j := a.queue[0]
		a.queue[0] = nil
		a.queue = a.queue[1:]
		a.seq++
		seq := a.seq
		a.running[seq] = &runningJob{j: j, at: now}
		a.s.goes.Go(a.s.log, "delivery attempt", func() {
			started := time.Now()
			var once sync.Once
			free := func(failed bool) {
				once.Do(func() { engine.Send(self, jobDone{seq: seq, failed: failed, took: time.Since(started)}) })
			}
			// A panic in the attempt still frees its place, as a failure.
			defer free(true)
			free(a.s.attempt(j, free))
		})
	}
	// While attempts run, look again when the oldest would stall (or the
	// queue's head would have waited StallAfter).
	if !a.armed && (len(a.running) > 0 || len(a.queue) > 0) {
		a.armed = true
		a.stallTimer = time.AfterFunc(a.s.cfg.StallAfter/2, func() { engine.Send(self, stallCheck{}) })
	}
}

// stalled reports whether every one of the limit slots is held by an
// attempt unanswered for StallAfter: nothing in the queue could start.
func (a *subscriberActor) stalled(now time.Time, limit int) bool {
	n := a.stalledCount(now)
	return n > 0 && n >= limit
}

// stalledCount is how many attempts have gone unanswered for StallAfter.
func (a *subscriberActor) stalledCount(now time.Time) int {
	n := 0
	for _, r := range a.running {
		if now.Sub(r.at) >= a.s.cfg.StallAfter {
			n++
		}
	}
	return n
}

// slow reports whether the queue beyond MaxQueue goes to the retry topic
// for a receiver that answers: it failed its latest attempt, or it took
// StallAfter/4 or more and the queue's head has waited StallAfter.
func (a *subscriberActor) slow(now time.Time) bool {
	stall := a.s.cfg.StallAfter
	return a.failing || (a.took >= stall/4 && len(a.queue) > 0 && now.Sub(a.queue[0].queued) >= stall)
}

// shedQueue postpones the queue's tail beyond keep.
func (a *subscriberActor) shedQueue(keep int) {
	for len(a.queue) > keep {
		j := a.queue[len(a.queue)-1]
		a.queue[len(a.queue)-1] = nil
		a.queue = a.queue[:len(a.queue)-1]
		a.shed(j)
	}
}

// shed postpones j to a retry tier on a goroutine of its own.
func (a *subscriberActor) shed(j *job) {
	a.s.goes.Go(a.s.log, "delivery postponement", func() {
		a.s.postpone(j)
	})
}

// submit hands j to the actor of its subscriber, spawning it the first
// time.
func (s *Service) submit(j *job) {
	key := j.d.Subscriber.String()
	s.mu.Lock()
	pid, ok := s.actors[key]
	if !ok {
		pid = s.cfg.Actors.Spawn(func() actor.Receiver {
			return &subscriberActor{s: s, running: map[uint64]*runningJob{}}
		}, "delivery", actors.SpawnOpts(s.log, actor.WithID(key))...)
		s.actors[key] = pid
	}
	s.mu.Unlock()
	j.queued = time.Now()
	s.cfg.Actors.Send(pid, j)
}

// attempt makes one attempt of j and records it; j is resolved unless the
// service stopped before the outcome was recorded. failed reports a
// receiver that refused the delivery or failed it other than by timing
// out (a receiver that hangs on one event may answer the next).
//
// free is called once the receiver answered (or not), before the outcome
// is recorded: the subscriber's slot goes to its next attempt while the
// batch with this one is written.
func (s *Service) attempt(j *job, free func(failed bool)) (failed bool) {
	d := j.d
	log := s.log.With().Int64("delivery", d.ID).Str("event_id", d.EventID).Str("subscriber", d.Subscriber.String()).Logger()
	if d.Status != docflow.DeliveryPending || (j.attempt > 0 && d.Attempts >= j.attempt) {
		j.resolve() // resolved already: a copy after a crash, or a stale retry
		return false
	}
	t, ok := s.target(d.Subscriber)
	if !ok {
		return false
	}
	sender := s.cfg.Senders[d.Subscriber.Kind]
	reason := ""
	switch {
	case !t.Found:
		reason = "subscriber deleted"
	case !t.Active:
		reason = "subscriber inactive"
	case sender == nil:
		reason = "no sender for subscriber kind " + d.Subscriber.Kind
	}
	if reason != "" {
		if s.retry("drop delivery", func(ctx context.Context) error {
			return s.cfg.Store.DropDelivery(ctx, d.ID, reason)
		}) {
			log.Info().Str("reason", reason).Msg("delivery dropped")
			j.resolve()
		}
		return false
	}

	n := d.Attempts + 1
	timeout := s.cfg.Timeout
	if timeout <= 0 {
		timeout = docflow.WebhookTimeout.Get(s.cfg.Settings)
	}
	started := time.Now()
	res := actors.RunTimed(s.ctx, timeout, func(ctx context.Context) (Result, error) {
		r := sender.Send(ctx, t, d)
		return r, nil
	})
	if s.ctx.Err() != nil {
		return false // stopping: the attempt is made again by the next owner
	}
	r := res.Value
	if res.Err != nil {
		r = Result{Err: res.Err}
	}
	hung := r.Err != nil && errors.Is(r.Err, context.DeadlineExceeded)
	if hung {
		r.Err = &netguard.Failure{Class: fmt.Sprintf("timed out after %v", timeout), Err: r.Err}
	}
	a := docflow.DeliveryAttempt{DeliveryID: d.ID, Attempt: n, StatusCode: r.StatusCode,
		Duration: time.Since(started), At: started, Status: docflow.DeliveryDelivered}
	var retry *docflow.OutboxMessage
	if r.Err != nil || r.StatusCode < 200 || r.StatusCode > 299 {
		a.Error = failure(r)
		a.Status = docflow.DeliveryFailed
		if r.Unsubscribe {
			a.Error, a.Unsubscribe = fmt.Sprintf("receiver answered %d: unsubscribed", r.StatusCode), true
		} else if tier, delay, ok := s.next(n); ok && !r.Final {
			due := time.Now().Add(delay)
			m, err := retryMessage(d.ID, n+1, 0, tier, due)
			if err != nil {
				log.Error().Err(err).Msg("encode delivery retry")
			} else {
				a.Status, a.NextAttemptAt, retry = docflow.DeliveryPending, &due, &m
			}
		}
	}
	failed = a.Status != docflow.DeliveryDelivered && !hung
	free(failed)
	if !s.record(docflow.RecordedAttempt{Subscriber: d.Subscriber, Attempt: a, Retry: retry}) {
		return failed
	}
	if a.Unsubscribe {
		s.targets.Remove(d.Subscriber)
	}
	s.measure(d, a, r)
	ev := log.Debug()
	switch a.Status {
	case docflow.DeliveryFailed:
		ev = log.Warn()
	case docflow.DeliveryPending:
		ev = log.Info()
	}
	if a.Unsubscribe {
		log.Info().Int("status_code", r.StatusCode).Msg("receiver asked to unsubscribe: subscriber deleted")
	}
	ev.Int("attempt", n).Int("status_code", r.StatusCode).Str("error", a.Error).Str("status", a.Status).
		Dur("took", a.Duration).Msg("delivery attempt")
	j.resolve()
	return failed
}

// record writes attempt r, with the next batch when the store takes
// batches; false when the service stopped first.
func (s *Service) record(r docflow.RecordedAttempt) bool {
	if s.batch != nil {
		return s.batch.record(r)
	}
	return s.retry("record delivery attempt", func(ctx context.Context) error {
		_, err := s.cfg.Store.RecordAttempt(ctx, r.Subscriber, r.Attempt, r.Retry)
		return err
	})
}

// postpone puts j back on a delay topic without an attempt (its
// subscriber's queue is full or stalled) and resolves it.
func (s *Service) postpone(j *job) {
	due, m, err := s.postponement(j, time.Now())
	if err != nil {
		s.log.Error().Err(err).Msg("encode postponed delivery")
		return
	}
	ok := false
	if s.batch != nil {
		ok = s.batch.postpone(j.d.ID, due, m)
	} else {
		ok = s.retry("postpone delivery", func(ctx context.Context) error {
			return s.cfg.Store.Postpone(ctx, j.d.ID, due, m)
		})
	}
	if ok {
		j.resolve()
	}
}

// postponement returns when j's postponed attempt is due and the message
// that asks for it then. The first postponement waits the first retry
// tier's delay; each one in a row after it waits the next tier's (the
// last tier's once they run out): a receiver that stays dead or stalled
// sees its backlog come back ever more rarely rather than cycle through
// the first tier until its attempts, made a few at a time, run out. An
// attempt made resets the count (its retry message carries none).
func (s *Service) postponement(j *job, now time.Time) (time.Time, docflow.OutboxMessage, error) {
	n := j.postponed + 1
	tier, delay, _ := s.next(min(n, len(s.tiers)))
	due := now.Add(delay)
	m, err := retryMessage(j.d.ID, j.d.Attempts+1, n, tier, due)
	return due, m, err
}

func failure(r Result) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return fmt.Sprintf("receiver answered %d", r.StatusCode)
}

// measure records attempt a of d, which the sender answered with r, as a
// delivery metric: ok when delivered, failed otherwise (a retry to come
// included), classed by the answer's status or the error's kind.
func (s *Service) measure(d *docflow.EventDelivery, a docflow.DeliveryAttempt, r Result) {
	if s.cfg.Metrics == nil {
		return
	}
	m := docflow.Metric{Kind: docflow.MetricDelivery, Time: a.At, Type: d.Event.Name, Target: d.Subscriber.String(),
		Status: docflow.OutcomeOK, HTTPStatus: a.StatusCode, Attempt: a.Attempt, Duration: a.Duration}
	if d.Event.OwnerID != nil {
		m.OwnerID = *d.Event.OwnerID
	}
	if a.Status != docflow.DeliveryDelivered {
		m.Status = docflow.OutcomeFailed
		switch {
		case r.Err != nil && errors.Is(r.Err, context.DeadlineExceeded):
			m.ErrorClass = "timeout"
		case r.Err != nil:
			m.ErrorClass = "network"
		case a.StatusCode >= 500:
			m.ErrorClass = "http_5xx"
		default:
			m.ErrorClass = "http_4xx"
		}
	}
	s.cfg.Metrics.Record(m)
}
