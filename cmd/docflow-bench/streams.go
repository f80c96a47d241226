package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"docflow/streams"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

// benchKafkaBaseline measures raw kafka-go throughput through the embedded
// broker: n messages produced (acks from all replicas, 2 ms batches, keyed
// like file messages) while one consumer-group reader fetches and commits
// them. It is the baseline the engine's document throughput is compared
// against, in the same run on the same machine. It returns messages per
// second from the first produce to the last message consumed.
func benchKafkaBaseline(ctx context.Context, r *Report, n int) (msgsPerSec float64, err error) {
	if n <= 0 {
		return 0, errors.New("kafka baseline: n must be positive")
	}
	broker := streams.NewBroker(streams.BrokerConfig{Log: zerolog.New(io.Discard)})
	if err := broker.Start(); err != nil {
		return 0, fmt.Errorf("kafka baseline: %w", err)
	}
	defer broker.Close()
	brokers := broker.Addrs()
	const topic = "bench.baseline"
	if err := streams.EnsureTopics(ctx, brokers, []kafka.TopicConfig{
		{Topic: topic, NumPartitions: streams.DefaultPartitions, ReplicationFactor: 1},
	}); err != nil {
		return 0, fmt.Errorf("kafka baseline: %w", err)
	}

	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Topic:        topic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: 2 * time.Millisecond,
		BatchSize:    1000,
	}
	defer w.Close()
	rd := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           brokers,
		GroupID:           "bench-baseline",
		Topic:             topic,
		MinBytes:          1,
		MaxBytes:          8 << 20,
		MaxWait:           100 * time.Millisecond,
		StartOffset:       kafka.FirstOffset,
		HeartbeatInterval: time.Second,
	})
	defer rd.Close()

	value := make([]byte, 256) // about the size of a step task envelope
	start := time.Now()
	prodErr := make(chan error, 1)
	go func() {
		const chunk = 1000
		for lo := 0; lo < n; lo += chunk {
			msgs := make([]kafka.Message, 0, chunk)
			for i := lo; i < min(lo+chunk, n); i++ {
				msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(i % 4096)), Value: value})
			}
			if err := w.WriteMessages(ctx, msgs...); err != nil {
				prodErr <- fmt.Errorf("produce: %w", err)
				return
			}
		}
		prodErr <- nil
	}()

	// Commit the latest message of every partition each 1000 messages.
	latest := map[int]kafka.Message{}
	commit := func() error {
		msgs := make([]kafka.Message, 0, len(latest))
		for _, m := range latest {
			msgs = append(msgs, m)
		}
		clear(latest)
		return rd.CommitMessages(ctx, msgs...)
	}
	for got := 0; got < n; got++ {
		m, err := rd.FetchMessage(ctx)
		if err != nil {
			return 0, fmt.Errorf("kafka baseline: consume %d of %d: %w", got, n, err)
		}
		latest[m.Partition] = m
		if got%1000 == 999 {
			if err := commit(); err != nil {
				return 0, fmt.Errorf("kafka baseline: commit: %w", err)
			}
		}
	}
	if err := commit(); err != nil {
		return 0, fmt.Errorf("kafka baseline: commit: %w", err)
	}
	elapsed := time.Since(start)
	if err := <-prodErr; err != nil {
		return 0, fmt.Errorf("kafka baseline: %w", err)
	}
	msgsPerSec = float64(n) / elapsed.Seconds()
	r.Add(Row{
		Section: "streams",
		Name:    fmt.Sprintf("kafka-go produce+consume, %d msgs, embedded broker", n),
		Value:   msgsPerSec,
		Unit:    "msg/s",
		Target:  "baseline",
		Pass:    true,
	})
	return msgsPerSec, nil
}
