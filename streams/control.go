package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"docflow"
)

// TopicControl carries what every process must hear, not one of them: a
// system reset. It has one partition, and every process reads it from
// the end it found at start, without a consumer group (ControlListener).
const TopicControl = "docflow.control"

// TypeControl is the envelope type of a Control message.
const TypeControl = "control"

// Control kinds.
const (
	// ControlReset: the database and the work files were wiped; drop
	// whatever was cached of them.
	ControlReset = "system.reset"
)

// Control is a message to every process.
type Control struct {
	Kind    string `json:"kind"`
	ResetID string `json:"reset_id,omitempty"`
	Mode    string `json:"mode,omitempty"`
}

// EnvelopeType implements Payload.
func (Control) EnvelopeType() string { return TypeControl }

// Validate implements Payload.
func (c Control) Validate() error {
	switch {
	case c.Kind == "":
		return errors.New("kind is required")
	case c.Kind == ControlReset && c.ResetID == "":
		return errors.New("reset_id is required")
	}
	return nil
}

// controlKey keys every control message: one partition, one order.
const controlKey = "control"

// ControlMessage is the outbox row announcing c to every process, written
// in the transaction of the change it announces.
func ControlMessage(c Control, now time.Time) (docflow.OutboxMessage, error) {
	b, err := Encode("ctl_"+newEventID()[4:], now, c)
	if err != nil {
		return docflow.OutboxMessage{}, err
	}
	return docflow.OutboxMessage{Topic: TopicControl, Key: controlKey, Payload: b}, nil
}

// EnsureControlTopic creates TopicControl (one partition) when missing.
// Call it before the producer's first publish (see EnsureTopics).
func EnsureControlTopic(ctx context.Context, brokers []string) error {
	return EnsureTopics(ctx, brokers, []kafka.TopicConfig{{Topic: TopicControl, NumPartitions: 1, ReplicationFactor: 1}})
}

// ControlListener reads TopicControl from where its end was at start and
// hands each message to its handler, one at a time, in order. Messages
// older than the process are not read: a process that starts after a
// reset has nothing of before it cached.
type ControlListener struct {
	brokers []string
	handle  func(Control)
	log     zerolog.Logger

	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// controlWait bounds one fetch of the control listener (and so how long
// Close waits for it).
const controlWait = time.Second

// ListenControl finds the end of TopicControl and starts reading from
// there; handle runs on the listener's goroutine. Close stops it.
func ListenControl(ctx context.Context, brokers []string, log zerolog.Logger, handle func(Control)) (*ControlListener, error) {
	if len(brokers) == 0 || handle == nil {
		return nil, errors.New("listen control: brokers and a handler are required")
	}
	start, err := controlEnd(ctx, brokers)
	if err != nil {
		return nil, err
	}
	l := &ControlListener{brokers: brokers, handle: handle, log: log.With().Str("component", "control").Logger(), done: make(chan struct{})}
	var lctx context.Context
	lctx, l.cancel = context.WithCancel(context.Background())
	go l.run(lctx, start)
	return l, nil
}

// controlEnd is the offset after the last message of TopicControl. A
// topic just created may have no leader yet: it asks again for a while.
func controlEnd(ctx context.Context, brokers []string) (int64, error) {
	var d kafka.Dialer
	var err error
	for attempt := 0; ; attempt++ {
		for _, b := range brokers {
			var conn *kafka.Conn
			if conn, err = d.DialLeader(ctx, "tcp", b, TopicControl, 0); err != nil {
				continue
			}
			var end int64
			end, err = conn.ReadLastOffset()
			conn.Close()
			if err == nil {
				return end, nil
			}
		}
		if attempt == 40 || ctx.Err() != nil {
			return 0, fmt.Errorf("listen control: find the end of %s: %w", TopicControl, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// run reads from offset next until ctx ends. A reader whose fetch timed
// out (the broker away) is replaced by a new one at the next offset.
func (l *ControlListener) run(ctx context.Context, next int64) {
	defer close(l.done)
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		rctx, abort := context.WithCancel(ctx)
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: l.brokers, Topic: TopicControl, Partition: 0,
			MinBytes: 1, MaxBytes: 1 << 20, MaxWait: controlWait,
			ReadBackoffMin: 20 * time.Millisecond, ReadBackoffMax: time.Second,
			ReadLagInterval: -1, // no lag reading of its own (see Consumer)
			ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
				if timedOut(args) {
					abort()
				}
			})})
		if err := r.SetOffset(next); err != nil {
			l.log.Warn().Err(err).Int64("offset", next).Msg("control: set offset")
		}
		for {
			m, err := r.ReadMessage(rctx)
			if err != nil {
				break
			}
			next = m.Offset + 1
			backoff = 100 * time.Millisecond
			_, c, err := Decode[Control](m.Value)
			if err != nil {
				l.log.Warn().Err(err).Int64("offset", m.Offset).Msg("control: message skipped")
				continue
			}
			l.handle(c)
		}
		abort()
		r.Close()
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

// Close stops reading and waits for the handler under way.
func (l *ControlListener) Close() {
	l.once.Do(func() {
		l.cancel()
		<-l.done
	})
}
