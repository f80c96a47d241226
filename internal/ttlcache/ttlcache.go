// Package ttlcache is the one cache of answers that stay good for a short
// time (a token's owner, a subscriber's target, a pipeline): bounded, the
// least recently used entry leaving first when it is full (no cliff where
// everything is dropped at once), and an entry older than the TTL never
// answered. It starts no goroutine: a stale entry is dropped when asked
// for or pushed out by newer ones.
package ttlcache

import (
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache maps K to V for TTL. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	lru *lru.Cache[K, entry[V]]
	ttl time.Duration
	now func() time.Time
}

type entry[V any] struct {
	v  V
	at time.Time
}

// New returns a cache of at most size entries (at least 1), each good for
// ttl by the clock now (time.Now when nil). A ttl of zero or less caches
// nothing: every Get misses.
func New[K comparable, V any](size int, ttl time.Duration, now func() time.Time) *Cache[K, V] {
	l, err := lru.New[K, entry[V]](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1
	}
	if now == nil {
		now = time.Now
	}
	return &Cache[K, V]{lru: l, ttl: ttl, now: now}
}

// Get returns k's value when it was added less than TTL ago.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	e, ok := c.lru.Get(k)
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.v, true
	}
	if ok {
		c.lru.Remove(k)
	}
	var zero V
	return zero, false
}

// Add keeps v for k from now on.
func (c *Cache[K, V]) Add(k K, v V) { c.AddAt(k, v, c.now()) }

// AddAt keeps v for k as read at at: a value read before a slow load
// expires TTL after the read, not after the load.
func (c *Cache[K, V]) AddAt(k K, v V, at time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.lru.Add(k, entry[V]{v: v, at: at})
}

// Remove forgets k.
func (c *Cache[K, V]) Remove(k K) { c.lru.Remove(k) }

// Purge forgets everything.
func (c *Cache[K, V]) Purge() { c.lru.Purge() }

// Len is how many entries are kept, stale ones included.
func (c *Cache[K, V]) Len() int { return c.lru.Len() }
