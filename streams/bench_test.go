package streams

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
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
