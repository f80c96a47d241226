package streams_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"docflow/streams"
	"docflow/streams/streamstest"
)

// BenchmarkConsumerThroughput measures the consumer (asynchronous acks,
// contiguous commits) over b.N messages on the embedded broker.
func BenchmarkConsumerThroughput(b *testing.B) {
	br := streamstest.NewBroker(b, streams.BrokerConfig{})
	brokers := br.Addrs()
	topic := "bench.consumer." + randHex(3)
	streamstest.CreateTopics(b, brokers, streams.DefaultPartitions, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(b, brokers)
	produceN(b, p, topic, b.N, func(i int) string { return strconv.Itoa(i % 4096) })
	var acked atomic.Int64
	done := make(chan struct{})
	b.ResetTimer()
	start := time.Now()
	startConsumer(b, streams.ConsumerConfig{
		Brokers: brokers, GroupID: "bench", Topics: []string{topic}, DeadLetters: p,
		Handler: func(d *streams.Delivery) {
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
