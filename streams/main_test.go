package streams_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"docflow/streams"
	"docflow/streams/streamstest"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// fast is cfg with streamstest.FastGroup's timings.
func fast(cfg streams.ConsumerConfig) streams.ConsumerConfig {
	streamstest.FastGroup(&cfg)
	return cfg
}

func startConsumer(t testing.TB, cfg streams.ConsumerConfig) *streams.Consumer {
	t.Helper()
	c, err := streams.NewConsumer(fast(cfg))
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
