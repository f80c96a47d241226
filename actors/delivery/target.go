package delivery

import (
	"context"
	"sync"
	"time"

	"docflow"
)

// targetCache keeps the subscribers' targets read from the store for ttl:
// a burst of events reads each subscriber once per ttl instead of once
// per delivery.
type targetCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[docflow.Subscriber]cachedTarget
}

type cachedTarget struct {
	t  docflow.DeliveryTarget
	at time.Time
}

func (c *targetCache) get(sub docflow.Subscriber, now time.Time) (docflow.DeliveryTarget, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[sub]
	if !ok || now.Sub(e.at) >= c.ttl {
		return docflow.DeliveryTarget{}, false
	}
	return e.t, true
}

func (c *targetCache) put(sub docflow.Subscriber, t docflow.DeliveryTarget, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[docflow.Subscriber]cachedTarget{}
	}
	if len(c.m) > 100_000 {
		clear(c.m) // a bound; a miss only costs a read
	}
	c.m[sub] = cachedTarget{t: t, at: at}
}

// forget drops sub's target (it unsubscribed).
func (c *targetCache) forget(sub docflow.Subscriber) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, sub)
}

// target returns where sub's deliveries go, from the cache when it was
// read less than TargetTTL ago; ok is false when the service stopped
// first.
func (s *Service) target(sub docflow.Subscriber) (t docflow.DeliveryTarget, ok bool) {
	now := time.Now()
	if t, hit := s.targets.get(sub, now); hit {
		return t, true
	}
	if !s.retry("read delivery target", func(ctx context.Context) (err error) {
		t, err = s.cfg.Store.Target(ctx, sub)
		return err
	}) {
		return t, false
	}
	s.targets.put(sub, t, now)
	return t, true
}
