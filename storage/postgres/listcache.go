package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"docflow/internal/ttlcache"
)

// This file holds the listing engine's caches: totals and page anchors
// (listCache), plain counts (newCountCache) and statement texts
// (listTexts).

// listTTL bounds how stale a cached listing total or page anchor may be.
// NOTE: counting 100,000 rows costs more than the page itself, and so does
// skipping to page 4,000; a total or an anchor a second old is fine for a
// paginated list. Totals below countCacheMin are never cached (they are
// cheap and then always exact), so small lists see every change at once.
const listTTL = time.Second

// countCacheMin is the smallest total worth caching.
const countCacheMin = 5000

// anchorStep is the distance in rows between two cached page anchors. At
// the default page size every page starts right after an anchor, so a deep
// page is a keyset seek like page 1; other sizes skip fewer than
// anchorStep rows. One refresh reads the whole sort index either way.
const anchorStep = 25

type listEntry struct {
	val        any
	at         time.Time
	refreshing bool
	ready      chan struct{} // closed once val is first set
	err        error
}

// listRefreshTimeout bounds a background refresh of a cached value.
const listRefreshTimeout = 30 * time.Second

// listCache serves cached values. A missing value is computed by the first
// request that needs it while the others wait for it; a stale one is
// recomputed in the background while every request, the one that noticed
// included, keeps using the old value, so neither a burst nor the request
// that happens to arrive after the TTL pays for a recount.
//
// NOTE: not internal/ttlcache: a stale value is still served while it is
// refreshed. Past listCacheSize keys the least recently used leaves.
type listCache struct {
	now func() time.Time
	mu  sync.Mutex
	m   *simplelru.LRU[string, *listEntry]
}

// listCacheSize bounds the totals and anchors a listCache keeps.
const listCacheSize = 10_000

func newListCache(now func() time.Time) *listCache {
	m, err := simplelru.NewLRU[string, *listEntry](listCacheSize, nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &listCache{now: now, m: m}
}

// purge drops every cached value (a system reset emptied the tables).
func (c *listCache) purge() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.Purge()
}

// peek is key's entry (nil when none) without making it recently used.
func (c *listCache) peek(key string) *listEntry {
	e, _ := c.m.Peek(key)
	return e
}

// get returns the cached value of key, computing it when missing or stale.
// keep reports whether a computed value is worth caching. compute's context
// is ctx, or for a background refresh a detached one with a timeout.
func (c *listCache) get(ctx context.Context, key string, compute func(context.Context) (any, error), keep func(any) bool) (any, error) {
	c.mu.Lock()
	e, ok := c.m.Get(key)
	switch {
	case ok && e.ready == nil && c.now().Sub(e.at) <= listTTL:
		c.mu.Unlock()
		return e.val, nil
	case ok && e.ready == nil && e.refreshing:
		c.mu.Unlock()
		return e.val, nil
	case ok && e.ready != nil:
		ready := e.ready
		c.mu.Unlock()
		<-ready
		if e.err != nil {
			return compute(ctx)
		}
		return e.val, nil
	case ok:
		e.refreshing = true
		old := e.val
		c.mu.Unlock()
		// The goroutine ends with its query (bounded by the timeout).
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), listRefreshTimeout)
			defer cancel()
			v, err := compute(rctx)
			c.mu.Lock()
			defer c.mu.Unlock()
			e.refreshing = false
			switch {
			case err != nil:
				// Keep the old value; the next request past the TTL retries.
			case keep(v):
				e.val, e.at = v, c.now()
			case c.peek(key) == e:
				c.m.Remove(key)
			}
		}()
		return old, nil
	}
	e = &listEntry{ready: make(chan struct{})}
	c.m.Add(key, e)
	c.mu.Unlock()
	v, err := compute(ctx)
	c.mu.Lock()
	e.val, e.err, e.at = v, err, c.now()
	close(e.ready)
	e.ready = nil
	if (err != nil || !keep(v)) && c.peek(key) == e {
		c.m.Remove(key)
	}
	c.mu.Unlock()
	return v, err
}

// has reports whether key holds a value, fresh or stale.
func (c *listCache) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m.Peek(key)
	return ok && e.ready == nil
}

// put stores v as the fresh value of key.
func (c *listCache) put(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m.Peek(key); ok && (e.ready != nil || e.refreshing) {
		return
	}
	c.m.Add(key, &listEntry{val: v, at: c.now()})
}

// countTTL bounds how stale a cached count may be (newCountCache).
const countTTL = time.Second

// countCacheSize bounds the counts a cache of counts keeps.
const countCacheSize = 10_000

// newCountCache is a plain TTL cache of counts by key (cacheKey).
func newCountCache(now func() time.Time) *ttlcache.Cache[string, int] {
	return ttlcache.New[string, int](countCacheSize, countTTL, now)
}

func cacheKey(where string, args []any) string {
	var b strings.Builder
	b.WriteString(where)
	for _, a := range args {
		b.WriteString("\x00")
		fmt.Fprint(&b, a)
	}
	return b.String()
}

// listTexts keeps the text of the listing statements built so far, by
// what they are built from: the same few are built again and again, and
// building them was a fifth of what a listing allocated.
type listTexts struct {
	mu sync.Mutex
	m  map[listText]string
}

// listText is what a listing statement is built from. order holds the
// sort column.
type listText struct {
	kind                     int
	from, where, order, cols string
	status                   bool
	limit, offset            int
}

// The kinds of listing statement.
const (
	listSorted = iota
	listInMemory
	listDirect
	listSkip
)

// maxListTexts bounds listTexts; it starts again empty when full.
const maxListTexts = 1024

// get returns the text of k, built by build the first time.
func (t *listTexts) get(k listText, build func() string) string {
	t.mu.Lock()
	q, ok := t.m[k]
	t.mu.Unlock()
	if ok {
		return q
	}
	q = build()
	t.mu.Lock()
	if len(t.m) >= maxListTexts {
		clear(t.m)
	}
	t.m[k] = q
	t.mu.Unlock()
	return q
}
