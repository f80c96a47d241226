package pipeline

import (
	"math/rand/v2"
	"slices"
	"time"

	"docflow/streams"
)

// RetryPolicy decides where a failed attempt goes: attempt n (from 1) that
// failed waits on tier n-1, with ±Jitter around its delay; past the last
// tier the step fails for good.
type RetryPolicy struct {
	Tiers  []streams.RetryTier
	Jitter float64 // 0.2 = ±20 %
	rand   func() float64
}

// NewRetryPolicy returns the policy for delays (one tier each).
func NewRetryPolicy(delays []time.Duration, jitter float64) RetryPolicy {
	return RetryPolicy{Tiers: streams.RetryTiersFor(delays...), Jitter: jitter, rand: rand.Float64}
}

// Topics lists the delay topics of the tiers, each once (equal delays
// share one).
func (p RetryPolicy) Topics() []string {
	var out []string
	for _, t := range p.Tiers {
		if !slices.Contains(out, t.Topic()) {
			out = append(out, t.Topic())
		}
	}
	return out
}

// MaxAttempts is the number of attempts a step gets.
func (p RetryPolicy) MaxAttempts() int { return len(p.Tiers) + 1 }

// Next returns the tier and jittered delay after failed attempt n, or false
// when attempt n was the last.
func (p RetryPolicy) Next(attempt int) (streams.RetryTier, time.Duration, bool) {
	i := attempt - 1
	if i < 0 || i >= len(p.Tiers) {
		return streams.RetryTier{}, 0, false
	}
	t := p.Tiers[i]
	r := p.rand
	if r == nil {
		r = rand.Float64
	}
	f := 1 + p.Jitter*(2*r()-1)
	return t, time.Duration(float64(t.Delay) * f), true
}
