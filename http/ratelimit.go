package http

import (
	"context"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// rate is a parsed limit such as "100/minute".
type rate = docflow.Rate

func parseRate(s string) (rate, error) { return docflow.ParseRate(s) }

// window is a sliding-window counter: the previous fixed window's count,
// weighted by how much of it still overlaps, plus the current one.
type window struct {
	start      time.Time
	prev, curr int
}

const limiterShards = 64

// SharedLimiter holds a rate limit across every process that shares it
// (internal/ratelimit over PostgreSQL, wired by internal/app). Take spends
// one request of key under limit per period: ok false when the shared
// window is full, with the wait until it ends; an error when the shared
// store failed, and then this process's in-memory limiter decides (fail
// open to a per-process limit; the limiter logs the outage).
type SharedLimiter interface {
	Take(ctx context.Context, key string, limit int, period time.Duration) (ok bool, retryAfter time.Duration, err error)
}

// rateLimiter keeps sliding-window counters per key in memory: the API's
// limits when no SharedLimiter is configured or while it fails, and the
// bearer-token failure limit (per process, authfail.go). NOTE: alone, its
// limits are per process; with several api processes behind a balancer
// each enforces its share.
type rateLimiter struct {
	now    func() time.Time
	shards [limiterShards]struct {
		sync.Mutex
		m map[string]*window
	}
	cacheMu sync.Mutex
	parsed  map[string]rate
}

func newRateLimiter(now func() time.Time) *rateLimiter {
	l := &rateLimiter{now: now, parsed: map[string]rate{}}
	for i := range l.shards {
		l.shards[i].m = map[string]*window{}
	}
	return l
}

func (l *rateLimiter) rate(spec string) (rate, error) {
	l.cacheMu.Lock()
	defer l.cacheMu.Unlock()
	if r, ok := l.parsed[spec]; ok {
		return r, nil
	}
	r, err := parseRate(spec)
	if err == nil {
		l.parsed[spec] = r
	}
	return r, err
}

// allow counts one request for key; when over the limit it returns the
// seconds to wait.
func (l *rateLimiter) allow(key string, r rate) (ok bool, retryAfter int) {
	return l.take(key, r, true)
}

// blocked reports, without counting anything, whether key has used up r
// (and for how many seconds): failure limits ask it before the work whose
// failures they count.
func (l *rateLimiter) blocked(key string, r rate) (bool, int) {
	ok, retry := l.take(key, r, false)
	return !ok, retry
}

// add counts one event (a failure) for key; past the limit it counts
// nothing more, which is all a failure limit needs, since blocked stops the
// work that could fail.
func (l *rateLimiter) add(key string, r rate) {
	l.take(key, r, true)
}

// take checks key's window against r and, when count is set and there is
// room, counts one event.
func (l *rateLimiter) take(key string, r rate, count bool) (ok bool, retryAfter int) {
	h := fnv.New32a()
	h.Write([]byte(key))
	sh := &l.shards[h.Sum32()%limiterShards]
	now := l.now()
	sh.Lock()
	defer sh.Unlock()
	w := sh.m[key]
	if w == nil {
		if len(sh.m) > 50_000 {
			l.sweep(sh.m, now, r.Period)
		}
		w = &window{start: now.Truncate(r.Period)}
		sh.m[key] = w
	}
	cur := now.Truncate(r.Period)
	switch elapsed := cur.Sub(w.start); {
	case elapsed >= 2*r.Period:
		w.prev, w.curr, w.start = 0, 0, cur
	case elapsed >= r.Period:
		w.prev, w.curr, w.start = w.curr, 0, cur
	}
	overlap := 1 - float64(now.Sub(w.start))/float64(r.Period)
	estimate := float64(w.prev)*overlap + float64(w.curr)
	if estimate+1 > float64(r.N) {
		wait := w.start.Add(r.Period).Sub(now)
		return false, int(math.Max(1, math.Ceil(wait.Seconds())))
	}
	if count {
		w.curr++
	}
	return true, 0
}

func (l *rateLimiter) sweep(m map[string]*window, now time.Time, period time.Duration) {
	for k, w := range m {
		if now.Sub(w.start) > 2*period {
			delete(m, k)
		}
	}
}

// rateLimit applies the route's class: per user when authenticated, per
// client address otherwise (an IPv6 /64 counts as one address: addrKey);
// across every api process when Config.SharedLimits is set.
func (s *Server) rateLimit(c *fasthttp.RequestCtx, class Limit, user *docflow.User) error {
	if class == LimitNone || !docflow.RateLimitingEnabled.Get(s.cfg.Settings) {
		return nil
	}
	var key string
	setting := docflow.RateLimitDefault
	switch class {
	case LimitUpload:
		setting = docflow.RateLimitUpload
	case LimitAuth:
		setting = docflow.RateLimitAuth
	}
	name := setting.Key()
	r, err := s.limiter.rate(setting.Get(s.cfg.Settings))
	if err != nil {
		s.log.Warn().Err(err).Str("setting", name).Msg("invalid rate limit; not enforced")
		return nil
	}
	if user != nil && !user.Anonymous {
		key = name + "|u|" + user.ID
	} else {
		key = name + "|ip|" + s.auth.clientKey(c)
	}
	if shared := s.cfg.SharedLimits; shared != nil {
		ok, wait, err := shared.Take(RequestContext(c), key, r.N, r.Period)
		if err == nil {
			if !ok {
				return rateLimited(r, int(math.Max(1, math.Ceil(wait.Seconds()))))
			}
			return nil
		}
		// The shared store failed: this process's limit decides.
	}
	if ok, retry := s.limiter.allow(key, r); !ok {
		return rateLimited(r, retry)
	}
	return nil
}

// rateLimited is the 429 of a rate limit r, retry seconds to wait.
func rateLimited(r rate, retry int) error {
	e := docflow.Errorf(docflow.ERATELIMIT, "Rate limit exceeded: %d per %s", r.N, r.Unit)
	e.RetryAfter = retry
	return e
}
