package delivery

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/streams"
)

// TestPostponementsBackOff: an attempt postponed again and again (its
// receiver stays stalled or failing) comes back after each retry tier's
// delay in turn, then the last tier's, and its message carries the count;
// an attempt made resets it.
func TestPostponementsBackOff(t *testing.T) {
	t.Parallel()
	delays := []time.Duration{time.Minute, 10 * time.Minute, time.Hour}
	s := &Service{cfg: Config{Jitter: 0.2}, tiers: streams.RetryTiersFor(delays...)}
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	j := &job{d: &docflow.EventDelivery{ID: 7, Attempts: 2}}
	for i, want := range []time.Duration{time.Minute, 10 * time.Minute, time.Hour, time.Hour, time.Hour} {
		due, m, err := s.postponement(j, now)
		if err != nil {
			t.Fatal(err)
		}
		tier := s.tiers[min(i, len(delays)-1)]
		if m.Topic != RetryTopic(tier) || m.Headers[streams.HeaderTargetTopic] != TopicAttempts {
			t.Fatalf("postponement %d: topic %s (target %s), want %s", i+1, m.Topic, m.Headers[streams.HeaderTargetTopic], RetryTopic(tier))
		}
		if d := due.Sub(now); d < want*8/10 || d > want*12/10 {
			t.Fatalf("postponement %d: due after %v, want %v ± 20 %%", i+1, d, want)
		}
		// The attempt comes back as handle decodes it.
		var am attemptMsg
		if err := json.Unmarshal(m.Payload, &am); err != nil {
			t.Fatal(err)
		}
		if am.DeliveryID != 7 || am.Attempt != 3 || am.Postponed != i+1 {
			t.Fatalf("postponement %d: message %+v", i+1, am)
		}
		j = &job{d: j.d, attempt: am.Attempt, postponed: am.Postponed}
	}
	// A retry after an attempt made carries no count.
	m, err := retryMessage(7, 4, 0, s.tiers[0], now)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(m.Payload), "postponed") {
		t.Fatalf("retry message %s", m.Payload)
	}
}
