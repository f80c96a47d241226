package delivery

import (
	"context"
	"time"

	"docflow"
)

// targetCacheSize bounds the subscribers' targets kept (TargetTTL each):
// a burst of events reads each subscriber once per TTL instead of once per
// delivery.
const targetCacheSize = 100_000

// DropCaches forgets every subscriber's target (a system reset removed
// the subscribers).
func (s *Service) DropCaches() { s.targets.Purge() }

// target returns where sub's deliveries go, from the cache when it was
// read less than TargetTTL ago; ok is false when the service stopped
// first.
func (s *Service) target(sub docflow.Subscriber) (t docflow.DeliveryTarget, ok bool) {
	now := time.Now()
	if t, hit := s.targets.Get(sub); hit {
		return t, true
	}
	if !s.retry("read delivery target", func(ctx context.Context) (err error) {
		t, err = s.cfg.Store.Target(ctx, sub)
		return err
	}) {
		return t, false
	}
	s.targets.AddAt(sub, t, now)
	return t, true
}
