// Package streamstest starts what tests of the packages around streams
// share: an embedded broker with topics and a producer, an outbox relay,
// consumer-group timings that settle in tens of milliseconds, a reader
// of every partition of a topic, and a wait for a group to share its
// partitions.
package streamstest

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"docflow/streams"
)

// Log is the test log of the broker and the relay: warnings and errors
// go to the test's output, everything with STREAMS_TEST_LOG set.
func Log(t testing.TB) zerolog.Logger {
	if os.Getenv("STREAMS_TEST_LOG") != "" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// NewBroker starts an embedded broker for one test and closes it when
// the test ends; it logs to Log(t). A zero MinSessionTimeout becomes
// 500 ms, so that consumers with FastGroup's timings join.
func NewBroker(t testing.TB, cfg streams.BrokerConfig) *streams.Broker {
	t.Helper()
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = 500 * time.Millisecond
	}
	cfg.Log = Log(t)
	b := streams.NewBroker(cfg)
	if err := b.Start(); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

// Broker is an embedded broker run for one test, with a producer on it.
type Broker struct {
	*streams.Broker
	// Brokers are the broker's addresses, as clients take them.
	Brokers  []string
	Producer *streams.Producer
}

// StartBroker starts an embedded broker (NewBroker), creates topics of
// partitions partitions on it and opens a producer; all of it closes when
// the test ends.
func StartBroker(t testing.TB, partitions int, topics ...string) *Broker {
	t.Helper()
	b := &Broker{Broker: NewBroker(t, streams.BrokerConfig{})}
	b.Brokers = b.Addrs()
	CreateTopics(t, b.Brokers, partitions, topics...)
	b.Producer = NewProducer(t, b.Brokers)
	return b
}

// NewProducer opens a producer on brokers and closes it when the test
// ends.
func NewProducer(t testing.TB, brokers []string) *streams.Producer {
	t.Helper()
	p, err := streams.NewProducer(streams.ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// CreateTopics creates topics of partitions partitions on b (those that
// exist are kept).
func (b *Broker) CreateTopics(t testing.TB, partitions int, names ...string) {
	t.Helper()
	CreateTopics(t, b.Brokers, partitions, names...)
}

// StartRelay publishes store's outbox through b's producer, polling every
// poll besides the notifications, until the test ends.
func (b *Broker) StartRelay(t testing.TB, store streams.OutboxStore, poll time.Duration) *streams.Relay {
	t.Helper()
	r, err := streams.NewRelay(streams.RelayConfig{Store: store, Publisher: b.Producer, PollInterval: poll, Log: Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// CreateTopics creates topics of partitions partitions on brokers (those
// that exist are kept).
func CreateTopics(t testing.TB, brokers []string, partitions int, names ...string) {
	t.Helper()
	if len(names) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfgs := make([]kafka.TopicConfig, len(names))
	for i, n := range names {
		cfgs[i] = kafka.TopicConfig{Topic: n, NumPartitions: partitions, ReplicationFactor: 1}
	}
	if err := streams.EnsureTopics(ctx, brokers, cfgs); err != nil {
		t.Fatalf("ensure topics: %v", err)
	}
}

// FastGroup shortens a consumer's group timings (heartbeats, session,
// rebalance, drain, commits, fetch wait), so that joins, hand-overs and
// commits take tens of milliseconds instead of seconds. The broker must
// accept short sessions (NewBroker's default does).
func FastGroup(c *streams.ConsumerConfig) {
	c.HeartbeatInterval = 100 * time.Millisecond
	c.SessionTimeout = 2 * time.Second
	c.RebalanceTimeout = 4 * time.Second
	c.DrainTimeout = time.Second
	c.CommitInterval = 20 * time.Millisecond
	c.MaxWait = 400 * time.Millisecond
}

// linger is how long ReadTopic reads on after it has what it wanted, so
// that duplicates beyond it show.
const linger = 200 * time.Millisecond

// ReadTopic reads the partitions 0..partitions-1 of topic from the start,
// without a consumer group, until want messages arrived (then a little
// longer, so that duplicates show) or timeout passed, and returns what it
// read, each partition's in order.
func ReadTopic(t testing.TB, brokers []string, topic string, partitions, want int, timeout time.Duration) []streams.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var (
		mu   sync.Mutex
		got  []streams.Message
		wg   sync.WaitGroup
		done = make(chan struct{})
		once sync.Once
	)
	for p := range partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p, MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 100 * time.Millisecond})
			defer r.Close()
			for {
				m, err := r.FetchMessage(ctx)
				if err != nil {
					return
				}
				mu.Lock()
				got = append(got, m)
				n := len(got)
				mu.Unlock()
				if n >= want {
					once.Do(func() { close(done) })
				}
			}
		}()
	}
	select {
	case <-done:
		time.Sleep(linger)
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()
	return got
}

// WaitGroupShared waits (for at most d) until the consumer group is
// stable with members members, each holding at least one partition, as
// the broker describes it: a test that counts on how work is shared
// starts its work only then, not after a guessed time.
func WaitGroupShared(t testing.TB, broker, group string, members int, d time.Duration) {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(broker), Timeout: 10 * time.Second}
	var last string
	deadline := time.Now().Add(d)
	for {
		desc, err := cl.DescribeGroups(context.Background(), &kafka.DescribeGroupsRequest{GroupIDs: []string{group}})
		holding := 0
		switch {
		case err != nil:
			last = err.Error()
		case len(desc.Groups) != 1:
			last = "no such group"
		default:
			g := desc.Groups[0]
			for _, m := range g.Members {
				parts := 0
				for _, tp := range m.MemberAssignments.Topics {
					parts += len(tp.Partitions)
				}
				if parts > 0 {
					holding++
				}
			}
			last = g.GroupState + ", " + strconv.Itoa(len(g.Members)) + " members, " + strconv.Itoa(holding) + " holding partitions"
			if g.GroupState == "Stable" && len(g.Members) == members && holding == members {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for group %s to share its partitions among %d members (%s)", d, group, members, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
