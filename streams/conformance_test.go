package streams_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"docflow/internal/testsupport"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// produceN publishes n messages "0".."n-1" keyed by key(i), in parallel
// batches.
func produceN(t testing.TB, p *streams.Producer, topic string, n int, key func(int) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const chunk = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n/chunk+1)
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		msgs := make([]streams.Message, 0, hi-lo)
		for i := lo; i < hi; i++ {
			msgs = append(msgs, streams.Message{Topic: topic, Key: []byte(key(i)), Value: []byte(strconv.Itoa(i))})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.Publish(ctx, msgs...); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("produce: %v", err)
	}
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConsumerOutOfOrderAcks produces 20,000 messages and acknowledges them
// in random order from many goroutines: every message is handled once and
// the group ends committed at the end of every partition.
func TestConsumerOutOfOrderAcks(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic, parts, n = "conf.ooo", 6, 20000
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produceN(t, p, topic, n, func(i int) string { return "file-" + strconv.Itoa(i%997) })

	var (
		mu      sync.Mutex
		seen    = make(map[string]int, n)
		acked   atomic.Int64
		maxOpen atomic.Int64
		open    atomic.Int64
	)
	c := startConsumer(t, streams.ConsumerConfig{
		Brokers: brokers, GroupID: "g-ooo", Topics: []string{topic}, DeadLetters: p,
		MaxInFlightPerPartition: 128, MaxInFlight: 512,
		Handler: func(d *streams.Delivery) {
			if o := open.Add(1); o > maxOpen.Load() {
				maxOpen.Store(o)
			}
			go func() {
				time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond)
				mu.Lock()
				seen[string(d.Message.Value)]++
				mu.Unlock()
				open.Add(-1)
				d.Ack()
				acked.Add(1)
			}()
		},
	})
	testsupport.WaitFor(t, 90*time.Second, "20,000 acks", func() bool { return acked.Load() >= n })
	testsupport.WaitFor(t, time.Minute, "commits at the end of every partition", func() bool {
		sum := committedTotal(t, brokers, "g-ooo", topic, parts)
		return sum == n
	})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != n {
		t.Fatalf("saw %d distinct messages, want %d", len(seen), n)
	}
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("message %s handled %d times without a rebalance", v, k)
		}
	}
	if m := maxOpen.Load(); m > 512 {
		t.Fatalf("max in flight %d exceeds the budget of 512", m)
	}
	if c.InFlight() != 0 {
		t.Fatalf("in flight after all acks: %d", c.InFlight())
	}
}

// TestConsumerRebalance runs two members of one group over a stream: the
// second joins while the first has messages in flight, then the first
// leaves while messages are still arriving. Every message is handled at
// least once and the group ends fully committed.
func TestConsumerRebalance(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic, parts, third = "conf.rebalance", 6, 2000
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produce := func(round int) {
		produceN(t, p, topic, third, func(i int) string { return strconv.Itoa(round*third + i) })
	}

	var (
		mu    sync.Mutex
		seen  = map[string]int{}
		byMem = map[string]int{}
	)
	handler := func(member string) streams.Handler {
		return func(d *streams.Delivery) {
			go func() {
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				mu.Lock()
				seen[strconv.Itoa(d.Message.Partition)+"/"+strconv.FormatInt(d.Message.Offset, 10)]++
				byMem[member]++
				mu.Unlock()
				d.Ack()
			}()
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	cfg := streams.ConsumerConfig{Brokers: brokers, GroupID: "g-rebalance", Topics: []string{topic}, DeadLetters: p}
	cfgA, cfgB := cfg, cfg
	cfgA.Handler, cfgB.Handler = handler("a"), handler("b")

	a := startConsumer(t, cfgA)
	produce(0)
	testsupport.WaitFor(t, time.Minute, "first member busy", func() bool { return count() > third/4 })
	bm := startConsumer(t, cfgB) // joins with the first round in flight
	testsupport.WaitFor(t, time.Minute, "second member assigned", func() bool { return bm.Generations() > 0 && a.Generations() > 1 })
	produce(1)
	testsupport.WaitFor(t, time.Minute, "two rounds", func() bool { return count() == 2*third })
	mu.Lock()
	if byMem["b"] == 0 {
		t.Errorf("second member handled nothing of the second round: %v", byMem)
	}
	mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.Close(ctx); err != nil {
			t.Errorf("close first member: %v", err)
		}
	}()
	produce(2) // while the first member leaves
	<-done
	testsupport.WaitFor(t, 60*time.Second, "every message", func() bool { return count() == 3*third })
	testsupport.WaitFor(t, time.Minute, "group fully committed", func() bool {
		sum := committedTotal(t, brokers, "g-rebalance", topic, parts)
		return sum == 3*third
	})
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for _, k := range seen {
		dups += k - 1
	}
	t.Logf("handled: a=%d b=%d, redelivered %d", byMem["a"], byMem["b"], dups)
}

// TestConsumerStuckMessage leaves one message unacknowledged: its partition
// commits nothing past it and pauses at its budget; the other partitions
// are consumed and committed to the end.
func TestConsumerStuckMessage(t *testing.T) {
	// Serial: the stuck partition is given 500 ms to run into its budget;
	// other tests on the CPU could slow it down.
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic, parts, n, budget = "conf.stuck", 4, 2000, 16
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produceN(t, p, topic, n, func(i int) string { return strconv.Itoa(i) })

	// The stuck message: the 5th of partition 0.
	const stuckPart, stuckOffset = 0, 4
	var (
		mu         sync.Mutex
		perPart    = map[int]int{}
		stuck      *streams.Delivery
		pastStuck  int
		otherAcked atomic.Int64
	)
	startConsumer(t, streams.ConsumerConfig{
		Brokers: brokers, GroupID: "g-stuck", Topics: []string{topic}, DeadLetters: p,
		MaxInFlightPerPartition: budget,
		Handler: func(d *streams.Delivery) {
			mu.Lock()
			perPart[d.Message.Partition]++
			if d.Message.Partition == stuckPart {
				if d.Message.Offset == stuckOffset {
					stuck = d
					mu.Unlock()
					return // never acknowledged (until the end of the test)
				}
				if d.Message.Offset > stuckOffset {
					pastStuck++
				}
			} else {
				otherAcked.Add(1)
			}
			mu.Unlock()
			go d.Ack()
		},
	})
	// The other partitions are consumed to their end while partition 0
	// holds its stuck message: one stuck message delays nothing else.
	testsupport.WaitFor(t, time.Minute, "other partitions consumed to their end", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		lags, err := streams.PartitionLags(ctx, brokers, map[string]string{topic: "g-stuck"})
		if err != nil || len(lags) != parts {
			return false
		}
		for _, l := range lags {
			if l.Partition != stuckPart && l.Lag != 0 {
				return false
			}
		}
		return true
	})
	// The stuck partition runs into its budget, and commits up to the
	// stuck message.
	testsupport.WaitFor(t, time.Minute, "the stuck partition at its budget, committed up to the stuck message", func() bool {
		mu.Lock()
		past := pastStuck
		mu.Unlock()
		return past >= budget-1 && committed(t, brokers, "g-stuck", topic, parts)[stuckPart] >= stuckOffset
	})
	c := committed(t, brokers, "g-stuck", topic, parts)
	if got := c[stuckPart]; got != stuckOffset {
		t.Fatalf("stuck partition committed %d, want %d (just before the stuck message)", got, stuckOffset)
	}
	mu.Lock()
	if pastStuck != budget-1 {
		t.Errorf("stuck partition dispatched %d messages past the stuck one, want %d (paused at its budget)", pastStuck, budget-1)
	}
	total := 0
	for part := 1; part < parts; part++ {
		total += perPart[part]
	}
	s := stuck
	mu.Unlock()
	if int64(total) != otherAcked.Load() || total == 0 {
		t.Fatalf("other partitions handled %d messages, acknowledged %d", total, otherAcked.Load())
	}
	// Releasing it lets the partition catch up to the end.
	s.Ack()
	testsupport.WaitFor(t, time.Minute, "stuck partition committed to its end", func() bool {
		sum := committedTotal(t, brokers, "g-stuck", topic, parts)
		return sum == n
	})
}

// TestBrokerRestartKeepsData restarts the embedded broker on the same port
// with the same DataDir: messages and committed offsets survive, and the
// producer's next write goes through.
func TestBrokerRestartKeepsData(t *testing.T) {
	// Serial: it restarts the broker on the port it had, which a test
	// starting meanwhile could take.
	dir := t.TempDir()
	port := freePort(t)
	b := streamstest.NewBroker(t, streams.BrokerConfig{DataDir: dir, Port: port})
	brokers := b.Addrs()
	const topic, parts = "conf.restart", 3
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produceN(t, p, topic, 300, func(i int) string { return strconv.Itoa(i) })

	var mu sync.Mutex
	seen := map[string]int{}
	handler := func(d *streams.Delivery) {
		mu.Lock()
		seen[string(d.Message.Value)]++
		mu.Unlock()
		d.Ack()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	cfg := streams.ConsumerConfig{Brokers: brokers, GroupID: "g-restart", Topics: []string{topic}, DeadLetters: p, Handler: handler}
	c1 := startConsumer(t, cfg)
	testsupport.WaitFor(t, time.Minute, "first 300", func() bool { return count() == 300 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c1.Close(ctx); err != nil {
		t.Fatalf("close consumer: %v", err)
	}

	b.Close()
	b2 := streamstest.NewBroker(t, streams.BrokerConfig{DataDir: dir, Port: port})
	if b2.Addrs()[0] != brokers[0] {
		t.Fatalf("restarted on %v, want %v", b2.Addrs(), brokers)
	}
	produceN(t, p, topic, 300, func(i int) string { return "second-" + strconv.Itoa(i) })
	// (values repeat "0".."299": the second round is told apart by count)
	old := streamstest.ReadTopic(t, brokers, topic, parts, 600, time.Minute)
	if len(old) != 600 {
		t.Fatalf("topic holds %d messages after restart, want 600", len(old))
	}
	mu.Lock()
	clear(seen)
	mu.Unlock()
	startConsumer(t, cfg)
	testsupport.WaitFor(t, time.Minute, "second 300", func() bool { return count() == 300 })
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	for v, k := range seen {
		if k != 1 {
			t.Fatalf("message %s handled %d times after restart (committed offsets lost?)", v, k)
		}
	}
	if len(seen) != 300 {
		t.Fatalf("after restart handled %d messages, want only the 300 new ones", len(seen))
	}
}

// TestConsumerPoisonMessage sends an undecodable message among valid tasks:
// it is dead-lettered with its reason and the consumer keeps going.
func TestConsumerPoisonMessage(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic, parts = "conf.poison", 2
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	ctx := context.Background()
	var msgs []streams.Message
	for i := range 10 {
		v, err := streams.Encode(fmt.Sprintf("task-%d", i), time.Now(), streams.StepTask{RunID: "r", FileID: int64(i + 1), StepType: "ocr", Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, streams.Message{Topic: topic, Key: []byte("7"), Value: v})
		if i == 4 {
			msgs = append(msgs, streams.Message{Topic: topic, Key: []byte("7"), Value: []byte("{not json"),
				Headers: []streams.Header{{Key: streams.HeaderAttempt, Value: []byte("2")}}})
		}
	}
	if err := p.Publish(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int64
	startConsumer(t, streams.ConsumerConfig{
		Brokers: brokers, GroupID: "g-poison", Topics: []string{topic}, DeadLetters: p, Step: "ocr",
		OnFailure: func(context.Context, streams.Message, error) error {
			t.Error("a poison message reached the failure policy")
			return nil
		},
		Handler: func(d *streams.Delivery) {
			if _, _, err := streams.Decode[streams.StepTask](d.Message.Value); err != nil {
				d.Nack(err)
				return
			}
			ok.Add(1)
			d.Ack()
		},
	})
	dl := streamstest.ReadTopic(t, brokers, streams.TopicDLQ, streams.DefaultPartitions, 1, time.Minute)
	if len(dl) != 1 {
		t.Fatalf("dead letters: %d, want 1", len(dl))
	}
	m := dl[0]
	if string(m.Value) != "{not json" || string(m.Key) != "7" {
		t.Fatalf("dead letter carries %q/%q", m.Key, m.Value)
	}
	for h, want := range map[string]string{streams.HeaderStep: "ocr", streams.HeaderAttempt: "2", streams.HeaderOriginalTopic: topic} {
		if got := streams.HeaderValue(m, h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if streams.HeaderValue(m, streams.HeaderReason) == "" {
		t.Error("dead letter without x-reason")
	}
	testsupport.WaitFor(t, time.Minute, "valid tasks handled and all committed", func() bool {
		sum := committedTotal(t, brokers, "g-poison", topic, parts)
		return ok.Load() == 10 && sum == 11
	})
}

// TestConsumerFailurePolicy routes a Nacked message through the policy,
// retrying the policy until it succeeds; the offset is committed after.
func TestConsumerFailurePolicy(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic = "conf.failure"
	streamstest.CreateTopics(t, brokers, 1, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produceN(t, p, topic, 3, strconv.Itoa)
	var calls atomic.Int64
	startConsumer(t, streams.ConsumerConfig{
		Brokers: brokers, GroupID: "g-failure", Topics: []string{topic}, DeadLetters: p,
		OnFailure: func(_ context.Context, m streams.Message, cause error) error {
			if string(m.Value) != "1" || cause.Error() != "boom" {
				t.Errorf("policy got %q: %v", m.Value, cause)
			}
			if calls.Add(1) < 3 {
				return fmt.Errorf("retry topic unavailable")
			}
			return nil
		},
		Handler: func(d *streams.Delivery) {
			if string(d.Message.Value) == "1" {
				d.Nack(fmt.Errorf("boom"))
				return
			}
			d.Ack()
		},
	})
	testsupport.WaitFor(t, time.Minute, "committed past the failed message", func() bool {
		return committed(t, brokers, "g-failure", topic, 1)[0] == 3
	})
	if calls.Load() != 3 {
		t.Fatalf("policy called %d times, want 3", calls.Load())
	}
}

// TestLag reports uncommitted messages per topic: all of them before the
// group consumed, none after.
func TestLag(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic = "conf.lag"
	streamstest.CreateTopics(t, brokers, 3, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produceN(t, p, topic, 90, strconv.Itoa)
	ctx := context.Background()
	lag, err := streams.ConsumerLags(ctx, brokers, map[string]string{topic: "g-lag"})
	if err != nil || lag[topic] != 90 {
		t.Fatalf("lag before consuming: %v %v", lag, err)
	}
	startConsumer(t, streams.ConsumerConfig{Brokers: brokers, GroupID: "g-lag", Topics: []string{topic}, DeadLetters: p,
		Handler: func(d *streams.Delivery) { d.Ack() }})
	testsupport.WaitFor(t, time.Minute, "lag drained", func() bool {
		lag, err := streams.ConsumerLags(ctx, brokers, map[string]string{topic: "g-lag"})
		return err == nil && lag[topic] == 0
	})
}

// TestConsumerSurvivesBrokerRestart keeps a consumer running while the
// broker restarts on its port: it rejoins and consumes what comes after.
func TestConsumerSurvivesBrokerRestart(t *testing.T) {
	// Serial: it restarts the broker on the port it had, which a test
	// starting meanwhile could take.
	dir := t.TempDir()
	port := freePort(t)
	b := streamstest.NewBroker(t, streams.BrokerConfig{DataDir: dir, Port: port})
	brokers := b.Addrs()
	const topic, parts = "conf.live-restart", 3
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	var mu sync.Mutex
	seen := map[string]bool{}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(seen) }
	startConsumer(t, streams.ConsumerConfig{Brokers: brokers, GroupID: "g-live", Topics: []string{topic}, DeadLetters: p,
		Handler: func(d *streams.Delivery) {
			mu.Lock()
			seen[string(d.Message.Value)] = true
			mu.Unlock()
			d.Ack()
		}})
	produceN(t, p, topic, 100, func(i int) string { return strconv.Itoa(i) })
	testsupport.WaitFor(t, time.Minute, "first 100", func() bool { return count() == 100 })
	testsupport.WaitFor(t, time.Minute, "the first 100 committed", func() bool {
		return committedTotal(t, brokers, "g-live", topic, parts) == 100
	})
	b.Close()
	time.Sleep(300 * time.Millisecond) // the broker stays away for a moment
	streamstest.NewBroker(t, streams.BrokerConfig{DataDir: dir, Port: port})
	msgs := make([]streams.Message, 100)
	for i := range msgs {
		msgs[i] = streams.Message{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: []byte("after-" + strconv.Itoa(i))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Publish(ctx, msgs...); err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	testsupport.WaitFor(t, 60*time.Second, "messages after the restart", func() bool { return count() == 200 })
}

// TestConsumerFetchAnsweredLate has the broker answer every fetch later
// than the consumer's MaxWait (a busy broker, or a large backlog to send):
// the partitions still move, every message is handled, and the group
// commits to the end.
func TestConsumerFetchAnsweredLate(t *testing.T) {
	t.Parallel()
	b := streamstest.NewBroker(t, streams.BrokerConfig{})
	brokers := b.Addrs()
	const topic, parts, n = "conf.late", 2, 200
	streamstest.CreateTopics(t, brokers, parts, topic, streams.TopicDLQ)
	p := streamstest.NewProducer(t, brokers)
	produceN(t, p, topic, n, func(i int) string { return strconv.Itoa(i) })

	// Every fetch is answered 400 ms late: 4 times the MaxWait fastGroup
	// gives the consumer (100 ms).
	cl := b.Cluster()
	cl.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		cl.KeepControl()
		cl.SleepControl(func() { time.Sleep(400 * time.Millisecond) })
		return nil, nil, false
	})

	var (
		mu   sync.Mutex
		seen = map[string]bool{}
	)
	startConsumer(t, streams.ConsumerConfig{
		Brokers: brokers, GroupID: "g-late", Topics: []string{topic}, DeadLetters: p,
		Log: streamstest.Log(t),
		Handler: func(d *streams.Delivery) {
			mu.Lock()
			seen[string(d.Message.Value)] = true
			mu.Unlock()
			d.Ack()
		},
	})
	testsupport.WaitFor(t, 60*time.Second, "every message handled and committed", func() bool {
		mu.Lock()
		k := len(seen)
		mu.Unlock()
		if k < n {
			return false
		}
		sum := committedTotal(t, brokers, "g-late", topic, parts)
		return sum == n
	})
}
