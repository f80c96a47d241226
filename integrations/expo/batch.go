package expo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Expo's push service takes at most 100 messages per request, and its SDKs
// keep at most 6 requests open at once.
const (
	maxBatch    = 100
	maxRequests = 6
	// gather is how long a request waits for more messages to share it
	// once its first is queued: a burst of pushes (an event for many
	// devices) goes out a hundred per request, a lone push a few
	// milliseconds later.
	gather = 5 * time.Millisecond
)

// pushed is one queued message and where its outcome goes.
type pushed struct {
	msg Message
	ctx context.Context // the attempt's: once done, nobody waits
	out chan pushOutcome
}

// pushOutcome is what the relay answered for one message: its ticket, or
// the error of its whole request (status is the request's answer, 0 when
// there was none).
type pushOutcome struct {
	status int
	tk     ticket
	err    error
}

// batcher sends the messages that concurrent attempts queue in requests of
// up to maxBatch, at most maxRequests at once, and hands each attempt the
// ticket of its own message (Expo answers with the tickets in the order
// of the messages). Each of its goroutines (one per request under way)
// gathers messages for a moment, sends them, and takes the next ones while
// some wait; none lives without messages to send.
type batcher struct {
	// post makes one request of msgs and returns the answer's status and
	// tickets, one per message in order, or the request's error.
	post func(msgs []Message) (int, []ticket, error)

	mu      sync.Mutex
	queue   []*pushed
	running int
}

// send queues m and waits for its outcome, or for ctx.
func (b *batcher) send(ctx context.Context, m Message) pushOutcome {
	p := &pushed{msg: m, ctx: ctx, out: make(chan pushOutcome, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	if b.running < maxRequests {
		b.running++
		go b.loop()
	}
	b.mu.Unlock()
	select {
	case o := <-p.out:
		return o
	case <-ctx.Done():
		return pushOutcome{err: ctx.Err()}
	}
}

// queued is how many messages wait for a request.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// loop sends requests while messages wait, then ends.
func (b *batcher) loop() {
	time.Sleep(gather)
	for {
		b.mu.Lock()
		var batch []*pushed
		for len(b.queue) > 0 && len(batch) < maxBatch {
			p := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			if p.ctx.Err() == nil { // its attempt gave up: not sent
				batch = append(batch, p)
			}
		}
		if len(batch) == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		if len(b.queue) >= maxBatch && b.running < maxRequests {
			b.running++ // a full request more waits: send it beside this one
			go b.loop()
		}
		b.mu.Unlock()
		b.flush(batch)
	}
}

// flush makes batch's request and hands each message its outcome.
func (b *batcher) flush(batch []*pushed) {
	msgs := make([]Message, len(batch))
	for i, p := range batch {
		msgs[i] = p.msg
	}
	status, tks, err := b.post(msgs)
	if err == nil && len(tks) != len(batch) {
		err = fmt.Errorf("relay answered %d tickets for %d messages", len(tks), len(batch))
	}
	for i, p := range batch {
		o := pushOutcome{status: status, err: err}
		if err == nil {
			o.tk = tks[i]
		}
		p.out <- o
	}
}

// tickets reads a request's tickets: Expo answers an array request with
// an array of tickets in the order of the messages (an object for a lone
// message sent as an object, which a relay may answer for one too).
func tickets(data json.RawMessage, n int) ([]ticket, error) {
	var tks []ticket
	if err := json.Unmarshal(data, &tks); err == nil && len(tks) > 0 {
		return tks, nil
	}
	var tk ticket
	if err := json.Unmarshal(data, &tk); err == nil && tk.Status != "" && n == 1 {
		return []ticket{tk}, nil
	}
	return nil, errors.New("relay answer holds no push tickets")
}
