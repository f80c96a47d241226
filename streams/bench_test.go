package streams

import (
	"context"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// BenchmarkConsumerThroughput measures the consumer (asynchronous acks,
// contiguous commits) over b.N messages on the embedded broker.
func BenchmarkConsumerThroughput(b *testing.B) {
	br := startBroker(b, BrokerConfig{})
	brokers := br.Addrs()
	topic := "bench.consumer." + randHex(3)
	createTopics(b, brokers, DefaultPartitions, topic, TopicDLQ)
	p := newProducer(b, brokers)
	produceN(b, p, topic, b.N, func(i int) string { return strconv.Itoa(i % 4096) })
	var acked atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	startConsumer(b, ConsumerConfig{
		Brokers: brokers, GroupID: "bench", Topics: []string{topic}, DeadLetters: p,
		Handler: func(d *Delivery) {
			go func() {
				d.Ack()
				if acked.Add(1) == int64(b.N) {
					close(done)
				}
			}()
		},
	})
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		b.Fatal("timeout")
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

// BenchmarkRelayThroughput measures the outbox relay publishing a backlog
// of b.N rows.
func BenchmarkRelayThroughput(b *testing.B) {
	pool := testPool(b)
	br := startBroker(b, BrokerConfig{})
	brokers := br.Addrs()
	topic := "bench.relay." + randHex(3)
	b.Cleanup(func() { deleteRows(topic) })
	createTopics(b, brokers, DefaultPartitions, topic)
	p := newProducer(b, brokers)
	ctx := context.Background()
	for lo := 0; lo < b.N; lo += 1000 {
		var msgs []OutboxMessage
		for i := lo; i < min(lo+1000, b.N); i++ {
			msgs = append(msgs, OutboxMessage{Topic: topic, Key: strconv.Itoa(i % 4096), Payload: make([]byte, 256)})
		}
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := Enqueue(ctx, tx, msgs...); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	r, err := NewRelay(RelayConfig{Pool: pool, Publisher: p, Log: testLog(b)})
	if err != nil {
		b.Fatal(err)
	}
	r.Start()
	defer r.Close()
	for r.Published() < int64(b.N) {
		if time.Since(start) > 2*time.Minute {
			b.Fatal("timeout")
		}
		time.Sleep(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkOutboxLatency measures one row from its transaction's commit to
// its arrival at a consumer (LISTEN/NOTIFY wake-up, publish, fetch).
func BenchmarkOutboxLatency(b *testing.B) {
	pool := testPool(b)
	br := startBroker(b, BrokerConfig{})
	brokers := br.Addrs()
	topic := "bench.latency." + randHex(3)
	b.Cleanup(func() { deleteRows(topic) })
	createTopics(b, brokers, 1, topic)
	p := newProducer(b, brokers)
	r, err := NewRelay(RelayConfig{Pool: pool, Publisher: p, Log: testLog(b)})
	if err != nil {
		b.Fatal(err)
	}
	r.Start()
	defer r.Close()
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 50 * time.Millisecond})
	defer rd.Close()
	ctx := context.Background()
	time.Sleep(100 * time.Millisecond) // listener connected
	b.ResetTimer()
	var total, toKafka time.Duration
	var lat []time.Duration
	for i := range b.N {
		start := time.Now()
		tx, err := pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := Enqueue(ctx, tx, OutboxMessage{Topic: topic, Key: "1", Payload: []byte(strconv.Itoa(i))}); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		m, err := rd.FetchMessage(ctx)
		if err != nil || string(m.Value) != strconv.Itoa(i) {
			b.Fatalf("fetch: %v %q", err, m.Value)
		}
		total += time.Since(start)
		toKafka += m.Time.Sub(start)
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/row")
	b.ReportMetric(float64(toKafka.Microseconds())/float64(b.N)/1000, "ms-to-kafka/row")
}
