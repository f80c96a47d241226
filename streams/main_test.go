package streams

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func testLog(t testing.TB) zerolog.Logger {
	if os.Getenv("STREAMS_TEST_LOG") != "" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
}

// startBroker starts an embedded broker for one test.
func startBroker(t testing.TB, cfg BrokerConfig) *Broker {
	t.Helper()
	if cfg.MinSessionTimeout == 0 {
		cfg.MinSessionTimeout = 500 * time.Millisecond
	}
	cfg.Log = testLog(t)
	b := NewBroker(cfg)
	if err := b.Start(); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	t.Cleanup(b.Close)
	return b
}

func createTopics(t testing.TB, brokers []string, partitions int, names ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfgs := make([]kafka.TopicConfig, len(names))
	for i, n := range names {
		cfgs[i] = kafka.TopicConfig{Topic: n, NumPartitions: partitions, ReplicationFactor: 1}
	}
	if err := EnsureTopics(ctx, brokers, cfgs); err != nil {
		t.Fatalf("ensure topics: %v", err)
	}
}

func newProducer(t testing.TB, brokers []string) *Producer {
	t.Helper()
	p, err := NewProducer(ProducerConfig{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// fastGroup makes group membership changes quick for tests.
func fastGroup(cfg ConsumerConfig) ConsumerConfig {
	cfg.HeartbeatInterval = 100 * time.Millisecond
	cfg.SessionTimeout = 2 * time.Second
	cfg.RebalanceTimeout = 5 * time.Second
	cfg.DrainTimeout = 2 * time.Second
	cfg.CommitInterval = 20 * time.Millisecond
	cfg.MaxWait = 100 * time.Millisecond
	return cfg
}

func startConsumer(t testing.TB, cfg ConsumerConfig) *Consumer {
	t.Helper()
	c, err := NewConsumer(fastGroup(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return c
}

// committed returns the group's committed offsets of topic by partition.
func committed(t testing.TB, brokers []string, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	resp, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		out[p.Partition] = p.CommittedOffset
	}
	return out
}

// committedTotal is the sum of group's committed offsets over topic's
// partitions (a partition with none counts 0): the messages committed
// when every partition started at offset 0.
func committedTotal(t testing.TB, brokers []string, group, topic string, partitions int) int64 {
	t.Helper()
	var sum int64
	for _, off := range committed(t, brokers, group, topic, partitions) {
		sum += max(off, 0)
	}
	return sum
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
