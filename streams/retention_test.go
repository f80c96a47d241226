package streams_test

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"docflow/internal/testsupport"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// The embedded broker drops messages past its retention on its own (kfake
// would apply it only to topics given a retention of their own): the log
// starts after them, and it keeps the later ones. The messages' times say
// which are past it (an hour ago, an hour ahead), so a slow machine
// changes nothing.
func TestBrokerRetention(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{DataDir: t.TempDir(), Retention: 2 * time.Second})
	brokers := b.Addrs()
	const topic = "retention"
	streamstest.CreateTopics(t, brokers, 1, topic)
	p := streamstest.NewProducer(t, brokers)
	ctx := context.Background()
	for i := range 3 {
		m := streams.Message{Topic: topic, Key: []byte("k"), Value: []byte{byte(i)}, Time: time.Now().Add(-time.Hour)}
		if err := p.Publish(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Publish(ctx, streams.Message{Topic: topic, Key: []byte("k"), Value: []byte("kept"), Time: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	first := func() int64 {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := cl.ListOffsets(cctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {kafka.FirstOffsetOf(0)}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, po := range resp.Topics[topic] {
			if po.Error != nil {
				t.Fatal(po.Error)
			}
			return po.FirstOffset
		}
		t.Fatal("no offsets for the partition")
		return 0
	}
	testsupport.WaitFor(t, time.Minute, "the three old messages dropped", func() bool { return first() >= 3 })
	if n := first(); n != 3 {
		t.Fatalf("the log starts at %d", n)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m, err := r.ReadMessage(rctx)
	if err != nil || m.Offset != 3 || string(m.Value) != "kept" {
		t.Fatalf("read %d %q %v", m.Offset, m.Value, err)
	}
}
