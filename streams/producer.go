package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// Message is a Kafka record as kafka-go models it: Topic, Key, Value,
// Headers; Partition and Offset are set on consumed messages.
type Message = kafka.Message

// Header is one record header.
type Header = kafka.Header

// Publisher writes messages and returns once the broker acknowledged them.
type Publisher interface {
	Publish(ctx context.Context, msgs ...Message) error
}

var _ Publisher = (*Producer)(nil)

// ProducerConfig configures a Producer.
type ProducerConfig struct {
	Brokers []string
	// BatchTimeout bounds how long a message waits for others to share its
	// batch; 0 = 2 ms. (kafka-go's default of 1 s would delay a lone message
	// by a second.)
	BatchTimeout time.Duration
	// BatchSize caps the messages of one partition batch; 0 = 128.
	//
	// NOTE: kafka-go allocates room for BatchSize messages (about 150 bytes
	// each) for every batch it starts, however few it carries: at 1000 a
	// lone write-through message cost 150 KB of zeroed memory, the largest
	// share of the pipeline's garbage. A relay batch of 500 rows spread
	// over 12 partitions puts about 40 in each, so 128 rarely splits one.
	BatchSize int
	// WriteTimeout bounds one produce request; 0 = 10 s.
	WriteTimeout time.Duration
	// MaxAttempts per batch before Publish fails; 0 = 10.
	MaxAttempts int
}

// Producer publishes messages with acks from all in-sync replicas, choosing
// the partition by a hash of the key (one file's messages share a
// partition, in order). It is safe for concurrent use; concurrent Publish
// calls share batches.
type Producer struct {
	w *kafka.Writer

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // PublishAsync calls in progress
}

// NewProducer builds a producer; it connects lazily on the first publish.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	if len(cfg.Brokers) == 0 {
		return nil, errors.New("new producer: no brokers")
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 2 * time.Millisecond
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 128
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 10
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: cfg.BatchTimeout,
		BatchSize:    cfg.BatchSize,
		BatchBytes:   16 << 20,
		WriteTimeout: cfg.WriteTimeout,
		ReadTimeout:  cfg.WriteTimeout,
		MaxAttempts:  cfg.MaxAttempts,
		// NOTE: topics are created by EnsureTopics with the catalogue's
		// partition count; auto-creation would use the broker default.
		AllowAutoTopicCreation: false,
	}
	return &Producer{w: w}, nil
}

// Publish writes msgs (each with its Topic set) and returns once the broker
// acknowledged every one of them. On error some messages may have been
// written: a kafka.WriteErrors (errors.As) tells which failed, index by
// index. Messages of one partition keep their order.
func (p *Producer) Publish(ctx context.Context, msgs ...Message) error {
	if len(msgs) == 0 {
		return nil
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return errors.New("publish: producer closed")
	}
	if err := p.w.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("publish %d messages to %s: %w", len(msgs), msgs[0].Topic, err)
	}
	return nil
}

// PublishAsync publishes msgs in the background and calls done (if not nil)
// with Publish's result once the broker answered. Close waits for it.
func (p *Producer) PublishAsync(ctx context.Context, done func(error), msgs ...Message) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		if done != nil {
			done(errors.New("publish: producer closed"))
		}
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		err := p.w.WriteMessages(ctx, msgs...)
		if err != nil {
			err = fmt.Errorf("publish %d messages: %w", len(msgs), err)
		}
		if done != nil {
			done(err)
		}
	}()
}

// Close waits for asynchronous publishes, flushes and closes the writer.
func (p *Producer) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("close producer: %w", err)
	}
	return nil
}
