package ttlcache

import (
	"testing"
	"time"
)

func TestCache(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[string, int](2, time.Second, func() time.Time { return now })
	c.Add("a", 1)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Fatalf("fresh: %d %v", v, ok)
	}
	now = now.Add(time.Second)
	if _, ok := c.Get("a"); ok {
		t.Fatal("an entry TTL old still answers")
	}
	if c.Len() != 0 {
		t.Fatal("a stale entry asked for is kept")
	}
	// Full: the least recently used leaves, not everything.
	c.Add("a", 1)
	c.Add("b", 2)
	c.Get("a")
	c.Add("c", 3)
	if _, ok := c.Get("b"); ok {
		t.Fatal("the least recently used entry stayed")
	}
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a recently used entry left")
	}
	c.Remove("a")
	if _, ok := c.Get("a"); ok {
		t.Fatal("a removed entry answers")
	}
	// Read before a slow load: expires TTL after the read.
	c.AddAt("d", 4, now.Add(-900*time.Millisecond))
	now = now.Add(200 * time.Millisecond)
	if _, ok := c.Get("d"); ok {
		t.Fatal("AddAt's time not used")
	}
	c.Purge()
	if c.Len() != 0 {
		t.Fatal("Purge kept entries")
	}
	off := New[string, int](2, 0, nil)
	off.Add("a", 1)
	if _, ok := off.Get("a"); ok {
		t.Fatal("a TTL of 0 cached")
	}
}
