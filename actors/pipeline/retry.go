package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow/streams"
)

// RetryPolicy decides where a failed attempt goes: attempt n (from 1) that
// failed waits on tier n-1, with ±Jitter around its delay; past the last
// tier the step fails for good.
type RetryPolicy struct {
	Tiers  []streams.RetryTier
	Jitter float64 // 0.2 = ±20 %
	rand   func() float64
}

// NewRetryPolicy returns the policy for delays (one tier each).
func NewRetryPolicy(delays []time.Duration, jitter float64) RetryPolicy {
	return RetryPolicy{Tiers: streams.RetryTiersFor(delays...), Jitter: jitter, rand: rand.Float64}
}

// Topics lists the delay topics of the tiers, each once (equal delays
// share one).
func (p RetryPolicy) Topics() []string {
	var out []string
	for _, t := range p.Tiers {
		if !slices.Contains(out, t.Topic()) {
			out = append(out, t.Topic())
		}
	}
	return out
}

// MaxAttempts is the number of attempts a step gets.
func (p RetryPolicy) MaxAttempts() int { return len(p.Tiers) + 1 }

// Next returns the tier and jittered delay after failed attempt n, or false
// when attempt n was the last.
func (p RetryPolicy) Next(attempt int) (streams.RetryTier, time.Duration, bool) {
	i := attempt - 1
	if i < 0 || i >= len(p.Tiers) {
		return streams.RetryTier{}, 0, false
	}
	t := p.Tiers[i]
	r := p.rand
	if r == nil {
		r = rand.Float64
	}
	f := 1 + p.Jitter*(2*r()-1)
	return t, time.Duration(float64(t.Delay) * f), true
}

// delayRelay consumes the delay topics and, once a task is due, publishes it
// back to its step topic; the offset is acknowledged after the publish.
// Tasks of one tier arrive in due order, so a partition waits on its head.
type delayRelay struct {
	pub streams.Publisher
	log zerolog.Logger
	now func() time.Time

	ctx context.Context
	wg  sync.WaitGroup
}

func (r *delayRelay) handle(d *streams.Delivery) {
	m := d.Message
	due, err := strconv.ParseInt(streams.HeaderValue(m, streams.HeaderDueAt), 10, 64)
	target := streams.HeaderValue(m, streams.HeaderTargetTopic)
	if err != nil || target == "" {
		d.Nack(streams.Poison(fmt.Errorf("delayed task without %s/%s headers", streams.HeaderDueAt, streams.HeaderTargetTopic)))
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if r.forward(m, due, target) {
			d.Ack()
		} // else stopping: unresolved, the next owner waits for it
	}()
}

// forward waits until due, then publishes m to target; false when the relay
// stopped first.
func (r *delayRelay) forward(m streams.Message, due int64, target string) bool {
	if wait := time.UnixMilli(due).Sub(r.now()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return false
		}
	}
	out := streams.Message{Topic: target, Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		if h.Key != streams.HeaderDueAt && h.Key != streams.HeaderTargetTopic {
			out.Headers = append(out.Headers, h)
		}
	}
	backoff := 100 * time.Millisecond
	for {
		err := r.pub.Publish(r.ctx, out)
		if err == nil {
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
		r.log.Warn().Err(err).Str("topic", target).Msg("republish delayed task")
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
