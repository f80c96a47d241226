package destinations

import (
	"context"
	"time"

	"docflow"
)

// An attempt is claimed in storage when it is prepared (StartDelivery):
// the claim's lease is renewed while this actor holds the attempt, and a
// delivery another attempt holds is not sent. Copies of one task message
// (the outbox or a producer published it again after a fault) are thus
// sent once: a copy arriving while its delivery is held here is
// acknowledged at once, and one that finds the delivery claimed elsewhere
// waits for that claim's lease to end, then asks again (by then the
// delivery is usually done, and the copy is stale).

// taskKey identifies a delivery task: copies of one task share it.
type taskKey struct{ delivery, request int64 }

func keyOf(j *job) taskKey { return taskKey{j.msg.DeliveryID, j.msg.Request} }

// Messages of the actor about claims.
type (
	// renewTick: time to renew the leases of the claims held.
	renewTick struct{}
	// requeue: a job that found its delivery claimed elsewhere asks again.
	requeue struct{ j *job }
)

// hold takes j's task for this actor; false when a copy of it is held
// already (j is then acknowledged: the copy held makes the attempt).
func (a *destinationActor) hold(j *job) bool {
	k := keyOf(j)
	if a.held[k] != nil {
		a.log.Debug().Int64("delivery", k.delivery).Int64("request", k.request).Msg("a copy of a delivery task held already: dropped")
		j.d.Ack()
		return false
	}
	a.held[k] = j
	return true
}

// unhold forgets j's task: its outcome is being recorded, or j was given
// up.
func (a *destinationActor) unhold(j *job) {
	if k := keyOf(j); a.held[k] == j {
		delete(a.held, k)
	}
}

// wait parks j, whose delivery another attempt holds until until, and
// asks again then.
func (a *destinationActor) wait(j *job, until time.Time) {
	a.waiting = append(a.waiting, j)
	d := max(time.Until(until), 0) + 100*time.Millisecond
	e, self := a.e, a.self
	time.AfterFunc(d, func() { e.Send(self, requeue{j: j}) })
}

// applyRequeue queues a parked job again, unless it was given up since.
func (a *destinationActor) applyRequeue(j *job) {
	for i, w := range a.waiting {
		if w == j {
			a.waiting = append(a.waiting[:i], a.waiting[i+1:]...)
			a.queue = append(a.queue, j)
			return
		}
	}
}

// scheduleRenew arranges the next renewTick.
func (a *destinationActor) scheduleRenew() {
	e, self := a.e, a.self
	a.renewTimer = time.AfterFunc(a.s.cfg.ClaimLease/3, func() { e.Send(self, renewTick{}) })
}

// renew extends the leases of the claims of the attempts prepared and
// under way, on a goroutine.
func (a *destinationActor) renew() {
	a.scheduleRenew()
	var claims []int64
	for _, j := range a.ready {
		claims = append(claims, j.task.Claim)
	}
	if a.sending != nil {
		claims = append(claims, a.sending.task.Claim)
	}
	if len(claims) == 0 {
		return
	}
	s := a.s
	s.goDo(func() {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.ClaimLease/3)
		defer cancel()
		if err := s.cfg.Store.RenewDeliveryClaims(ctx, claims, s.cfg.ClaimLease); err != nil && s.ctx.Err() == nil {
			s.log.Warn().Err(err).Int("claims", len(claims)).Msg("renew delivery claims")
		}
	})
}

// releaseClaims gives back the claims of tasks given up before their
// attempt, so that the next owner need not wait for their leases.
func (a *destinationActor) releaseClaims(tasks ...*docflow.DeliveryTask) {
	var claims []int64
	for _, t := range tasks {
		if t != nil {
			claims = append(claims, t.Claim)
		}
	}
	if len(claims) == 0 {
		return
	}
	s := a.s
	s.goDo(func() {
		s.retry("release delivery claims", func(ctx context.Context) error {
			return s.cfg.Store.ReleaseDeliveryClaims(ctx, claims)
		})
	})
}
