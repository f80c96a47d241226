package http

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// rate is a parsed limit such as "100/minute".
type rate struct {
	n      int
	period time.Duration
	text   string // the period word for messages
}

// parseRate accepts "N/second|minute|hour|day" (also "N per minute").
func parseRate(s string) (rate, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.Replace(s, " per ", "/", 1)
	num, unit, ok := strings.Cut(s, "/")
	if !ok {
		return rate{}, fmt.Errorf("rate %q: want N/period", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n <= 0 {
		return rate{}, fmt.Errorf("rate %q: bad count", s)
	}
	unit = strings.TrimSpace(unit)
	var p time.Duration
	switch strings.TrimSuffix(unit, "s") {
	case "second", "sec", "s":
		p, unit = time.Second, "second"
	case "minute", "min", "m":
		p, unit = time.Minute, "minute"
	case "hour", "h":
		p, unit = time.Hour, "hour"
	case "day", "d":
		p, unit = 24*time.Hour, "day"
	default:
		return rate{}, fmt.Errorf("rate %q: unknown period", s)
	}
	return rate{n: n, period: p, text: unit}, nil
}

// window is a sliding-window counter: the previous fixed window's count,
// weighted by how much of it still overlaps, plus the current one.
type window struct {
	start      time.Time
	prev, curr int
}

const limiterShards = 64

// rateLimiter keeps sliding-window counters per key in memory. NOTE: limits
// are per process; with several api processes behind a balancer each
// enforces its share.
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
	h := fnv.New32a()
	h.Write([]byte(key))
	sh := &l.shards[h.Sum32()%limiterShards]
	now := l.now()
	sh.Lock()
	defer sh.Unlock()
	w := sh.m[key]
	if w == nil {
		if len(sh.m) > 50_000 {
			l.sweep(sh.m, now, r.period)
		}
		w = &window{start: now.Truncate(r.period)}
		sh.m[key] = w
	}
	cur := now.Truncate(r.period)
	switch elapsed := cur.Sub(w.start); {
	case elapsed >= 2*r.period:
		w.prev, w.curr, w.start = 0, 0, cur
	case elapsed >= r.period:
		w.prev, w.curr, w.start = w.curr, 0, cur
	}
	overlap := 1 - float64(now.Sub(w.start))/float64(r.period)
	estimate := float64(w.prev)*overlap + float64(w.curr)
	if estimate+1 > float64(r.n) {
		wait := w.start.Add(r.period).Sub(now)
		return false, int(math.Max(1, math.Ceil(wait.Seconds())))
	}
	w.curr++
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
// client address otherwise.
func (s *Server) rateLimit(c *fasthttp.RequestCtx, class Limit, user *docflow.User) error {
	if class == LimitNone || !docflow.SettingBool(s.cfg.Settings, "RATE_LIMITING_ENABLED", true) {
		return nil
	}
	var key, name string
	switch class {
	case LimitUpload:
		name = "RATE_LIMIT_UPLOAD"
	case LimitAuth:
		name = "RATE_LIMIT_AUTH"
	default:
		name = "RATE_LIMIT_DEFAULT"
	}
	r, err := s.limiter.rate(s.cfg.Settings.Get(name))
	if err != nil {
		s.log.Warn().Err(err).Str("setting", name).Msg("invalid rate limit; not enforced")
		return nil
	}
	if user != nil && !user.Anonymous {
		key = name + "|u|" + user.ID
	} else {
		key = name + "|ip|" + s.auth.clientIP(c)
	}
	if ok, retry := s.limiter.allow(key, r); !ok {
		e := docflow.Errorf(docflow.ERATELIMIT, "Rate limit exceeded: %d per %s", r.n, r.text)
		e.RetryAfter = retry
		return e
	}
	return nil
}
