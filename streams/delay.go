package streams

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// DelayRelay is the consumer of delay topics (the pipeline's retry tiers,
// the deliveries' retry tiers): a message carries HeaderDueAt and
// HeaderTargetTopic; once due it is published to its target topic, with
// its other headers, and only then acknowledged. Messages of one tier
// arrive in due order, so a partition waits on its head. A relay stopped
// (its context done) before a message is due leaves it unacknowledged, for
// the partition's next owner.
type DelayRelay struct {
	pub  Publisher
	log  zerolog.Logger
	now  func() time.Time
	what string // what the messages are, for errors and logs ("task")

	ctx context.Context
	wg  sync.WaitGroup
}

// NewDelayRelay returns a relay publishing through pub until ctx is done;
// now is the clock (nil: time.Now), what names the messages in errors and
// logs.
func NewDelayRelay(ctx context.Context, pub Publisher, log zerolog.Logger, now func() time.Time, what string) *DelayRelay {
	if now == nil {
		now = time.Now
	}
	return &DelayRelay{pub: pub, log: log, now: now, what: what, ctx: ctx}
}

// Handle is the consumer handler: it waits for d's due time on its own
// goroutine and acknowledges d once republished. A message without the
// two headers is poison.
func (r *DelayRelay) Handle(d *Delivery) {
	m := d.Message
	due, err := strconv.ParseInt(HeaderValue(m, HeaderDueAt), 10, 64)
	target := HeaderValue(m, HeaderTargetTopic)
	if err != nil || target == "" {
		d.Nack(Poison(fmt.Errorf("delayed %s without %s/%s headers", r.what, HeaderDueAt, HeaderTargetTopic)))
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if r.Forward(m, due, target) {
			d.Ack()
		} // else stopping: unresolved, the next owner waits for it
	}()
}

// Wait returns once every wait Handle started has ended (they end when the
// relay's context is done).
func (r *DelayRelay) Wait() { r.wg.Wait() }

// Forward waits until due (Unix milliseconds), then publishes m to target
// without the delay headers; false when the relay stopped first.
func (r *DelayRelay) Forward(m Message, due int64, target string) bool {
	if wait := time.UnixMilli(due).Sub(r.now()); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.ctx.Done():
			t.Stop()
			return false
		}
	}
	out := Message{Topic: target, Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		if h.Key != HeaderDueAt && h.Key != HeaderTargetTopic {
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
		r.log.Warn().Err(err).Str("topic", target).Msgf("republish delayed %s", r.what)
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
