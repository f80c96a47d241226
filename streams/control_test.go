package streams_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/streams"
	"docflow/streams/streamstest"
)

// TestControlReachesEveryListener: a control message published through
// the relay reaches every listener, each once; one published before a
// listener started is not read by it.
func TestControlReachesEveryListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := streamstest.StartBroker(t, 1)
	if err := streams.EnsureControlTopic(ctx, b.Brokers); err != nil {
		t.Fatal(err)
	}
	msg := func(id string) docflow.OutboxMessage {
		m, err := streams.ControlMessage(streams.Control{Kind: streams.ControlReset, ResetID: id, Mode: docflow.ResetFull}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	out := newMemOutbox(msg("before"))
	b.StartRelay(t, out, 20*time.Millisecond)
	testsupport.WaitFor(t, time.Minute, "the first message published", func() bool { return out.unsent() == 0 })

	var mu sync.Mutex
	seen := map[int][]string{}
	for i := range 2 {
		l, err := streams.ListenControl(ctx, b.Brokers, streamstest.Log(t), func(c streams.Control) {
			mu.Lock()
			defer mu.Unlock()
			seen[i] = append(seen[i], c.ResetID)
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
	}
	out.add(msg("after"))
	testsupport.WaitFor(t, time.Minute, "both listeners hear the reset", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen[0]) > 0 && len(seen[1]) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	for i := range 2 {
		if len(seen[i]) != 1 || seen[i][0] != "after" {
			t.Errorf("listener %d heard %v, want [after]", i, seen[i])
		}
	}
}
