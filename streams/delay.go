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
// its other headers, and only then acknowledged (at least once: a crash
// between the publish and the commit publishes it again). Messages of one
// tier arrive in due order; the relay releases all it holds in order of
// due time (arrival order among equal ones).
//
// Every waiting message is an entry of one min-heap keyed by due time,
// watched by one goroutine and one timer, so a backlog of any size costs
// its entries' memory and no goroutine each (the consumer's in-flight
// budget bounds how many are held). Due messages are published in
// batches of up to delayBatch.
//
// A message whose partition is revoked before it is due is released
// unacknowledged at once (Delivery.Release), for the partition's next
// owner. A relay stopped (its context done) before a message is due
// releases it the same way, so the consumer's Close returns at once.
type DelayRelay struct {
	pub  Publisher
	log  zerolog.Logger
	now  func() time.Time
	what string // what the messages are, for errors and logs ("task")

	ctx context.Context
	wg  sync.WaitGroup

	mu      sync.Mutex
	q       delayQueue
	seq     uint64
	revoked bool // an owned context ended: drop its entries
	// watched holds the stop function of the one context.AfterFunc per
	// partition ownership (Delivery.Owned) with entries.
	watched map[context.Context]func() bool
	wake    chan struct{}
}

// delayBatch caps the messages of one publish.
const delayBatch = 500

// delayOutcome is how a delayed message left the relay.
type delayOutcome int

const (
	delayForwarded delayOutcome = iota // published to its target
	delayRevoked                       // its partition was revoked first
	delayStopped                       // the relay stopped first
)

// delayed is one waiting message: out is what is published once due
// (Unix milliseconds); owned, when not nil, ends when its partition is
// revoked; done is called once with the outcome, never under the lock.
type delayed struct {
	due   int64
	seq   uint64
	out   Message
	owned context.Context
	done  func(delayOutcome)
}

// NewDelayRelay returns a relay publishing through pub until ctx is done;
// now is the clock (nil: time.Now), what names the messages in errors and
// logs. Its one goroutine runs until ctx is done (Wait).
func NewDelayRelay(ctx context.Context, pub Publisher, log zerolog.Logger, now func() time.Time, what string) *DelayRelay {
	if now == nil {
		now = time.Now
	}
	r := &DelayRelay{pub: pub, log: log, now: now, what: what, ctx: ctx,
		watched: map[context.Context]func() bool{}, wake: make(chan struct{}, 1)}
	r.wg.Add(1)
	go r.run()
	return r
}

// Handle is the consumer handler: it queues d until its due time and
// acknowledges d once republished. A message without the two headers is
// poison.
func (r *DelayRelay) Handle(d *Delivery) {
	m := d.Message
	due, err := strconv.ParseInt(HeaderValue(m, HeaderDueAt), 10, 64)
	target := HeaderValue(m, HeaderTargetTopic)
	if err != nil || target == "" {
		d.Nack(Poison(fmt.Errorf("delayed %s without %s/%s headers", r.what, HeaderDueAt, HeaderTargetTopic)))
		return
	}
	r.add(due, forwarded(m, target), d.Owned(), func(o delayOutcome) {
		switch o {
		case delayForwarded:
			d.Ack()
		case delayRevoked, delayStopped:
			// Unacknowledged, for the partition's next owner; released
			// rather than left unresolved, so the consumer's Close does
			// not wait its whole deadline for a message due later.
			d.Release()
		}
	})
}

// Wait returns once the relay's goroutine has ended (once its context is
// done).
func (r *DelayRelay) Wait() { r.wg.Wait() }

// Forward waits until due (Unix milliseconds), then publishes m to target
// without the delay headers; false when the relay stopped first.
func (r *DelayRelay) Forward(m Message, due int64, target string) bool {
	res := make(chan delayOutcome, 1)
	r.add(due, forwarded(m, target), nil, func(o delayOutcome) { res <- o })
	return <-res == delayForwarded
}

// forwarded is m as published to target: without the delay headers.
func forwarded(m Message, target string) Message {
	out := Message{Topic: target, Key: m.Key, Value: m.Value}
	for _, h := range m.Headers {
		if h.Key != HeaderDueAt && h.Key != HeaderTargetTopic {
			out.Headers = append(out.Headers, h)
		}
	}
	return out
}

// add queues out until due, watching owned for a revocation.
func (r *DelayRelay) add(due int64, out Message, owned context.Context, done func(delayOutcome)) {
	r.mu.Lock()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		done(delayStopped)
		return
	}
	r.seq++
	e := &delayed{due: due, seq: r.seq, out: out, owned: owned, done: done}
	r.q.push(e)
	if owned != nil {
		if _, ok := r.watched[owned]; !ok {
			r.watched[owned] = context.AfterFunc(owned, func() {
				r.mu.Lock()
				r.revoked = true
				delete(r.watched, owned)
				r.mu.Unlock()
				r.poke()
			})
		}
	}
	head := r.q[0].e == e
	r.mu.Unlock()
	if head {
		r.poke() // the timer must fire earlier
	}
}

func (r *DelayRelay) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// run is the relay's goroutine: it publishes what is due, then sleeps
// until the head of the heap is due, a new head arrives or a partition is
// revoked.
func (r *DelayRelay) run() {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		gone, batch, wait := r.take()
		for _, e := range gone {
			e.done(delayRevoked)
		}
		if len(batch) > 0 {
			r.publish(batch)
			continue
		}
		timer.Stop()
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-r.wake:
		case <-timer.C:
		case <-r.ctx.Done():
			r.stop()
			return
		}
	}
}

// take removes the entries of revoked partitions (gone) and up to
// delayBatch due ones (batch, in due order); wait is how long until the
// head is due (-1: the heap is empty).
func (r *DelayRelay) take() (gone, batch []*delayed, wait time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.revoked {
		r.revoked = false
		keep := r.q[:0]
		for _, k := range r.q {
			if k.e.owned != nil && k.e.owned.Err() != nil {
				gone = append(gone, k.e)
			} else {
				keep = append(keep, k)
			}
		}
		clear(r.q[len(keep):])
		r.q = keep
		r.q.init()
	}
	now := r.now().UnixMilli()
	for len(r.q) > 0 && len(batch) < delayBatch && r.q[0].due <= now {
		batch = append(batch, r.q.pop())
	}
	wait = -1
	if len(r.q) > 0 {
		wait = time.Duration(r.q[0].due-now) * time.Millisecond
	}
	return gone, batch, wait
}

// publish publishes batch, retrying with a backoff until it is published
// or the relay stops; an entry whose partition is revoked meanwhile is
// released instead.
func (r *DelayRelay) publish(batch []*delayed) {
	backoff := 100 * time.Millisecond
	for {
		live := batch[:0]
		for _, e := range batch {
			if e.owned != nil && e.owned.Err() != nil {
				e.done(delayRevoked)
			} else {
				live = append(live, e)
			}
		}
		batch = live
		if len(batch) == 0 {
			return
		}
		msgs := make([]Message, len(batch))
		for i, e := range batch {
			msgs[i] = e.out
		}
		err := r.pub.Publish(r.ctx, msgs...)
		if err == nil {
			for _, e := range batch {
				e.done(delayForwarded)
			}
			return
		}
		if r.ctx.Err() == nil {
			r.log.Warn().Err(err).Str("topic", msgs[0].Topic).Int("messages", len(msgs)).Msgf("republish delayed %s", r.what)
			select {
			case <-time.After(backoff):
				backoff = min(2*backoff, 5*time.Second)
				continue
			case <-r.ctx.Done():
			}
		}
		for _, e := range batch {
			e.done(delayStopped)
		}
		return
	}
}

// stop ends every wait: the entries stay unacknowledged.
func (r *DelayRelay) stop() {
	r.mu.Lock()
	q := r.q
	r.q = nil
	for _, cancel := range r.watched {
		cancel()
	}
	clear(r.watched)
	r.mu.Unlock()
	for _, k := range q {
		k.e.done(delayStopped)
	}
}

// delayQueue is a min-heap of delayed messages by due time, then
// arrival: the keys sit in the slice itself, so a sift compares without
// following pointers.
type delayQueue []delayEntry

type delayEntry struct {
	due int64
	seq uint64
	e   *delayed
}

func (a delayEntry) less(b delayEntry) bool {
	return a.due < b.due || (a.due == b.due && a.seq < b.seq)
}

func (q *delayQueue) push(e *delayed) {
	h := append(*q, delayEntry{due: e.due, seq: e.seq, e: e})
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].less(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
	*q = h
}

// pop removes the head.
func (q *delayQueue) pop() *delayed {
	h := *q
	top := h[0].e
	n := len(h) - 1
	h[0] = h[n]
	h[n] = delayEntry{}
	h = h[:n]
	q.down(h, 0)
	*q = h
	return top
}

// init restores the heap order of any slice.
func (q delayQueue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(q, i)
	}
}

func (delayQueue) down(h delayQueue, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
