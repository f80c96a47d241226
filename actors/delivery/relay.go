package delivery

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"docflow/streams"
)

// delayRelay consumes the delivery delay topics and, once a retry is due,
// publishes it to its target topic (TopicAttempts); the offset is
// acknowledged after the publish. Retries of one tier arrive in due
// order, so a partition waits on its head. (The pipeline's retry tiers
// work the same way on their own topics.)
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
		d.Nack(streams.Poison(fmt.Errorf("delayed delivery without %s/%s headers", streams.HeaderDueAt, streams.HeaderTargetTopic)))
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if r.forward(m, due, target) {
			d.Ack()
		}
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
	backoff := 100 * time.Millisecond
	for {
		err := r.pub.Publish(r.ctx, out)
		if err == nil {
			return true
		}
		if r.ctx.Err() != nil {
			return false
		}
		r.log.Warn().Err(err).Str("topic", target).Msg("republish delayed delivery")
		select {
		case <-time.After(backoff):
		case <-r.ctx.Done():
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}
