package intake

import (
	"context"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// loadCacheTTL bounds how often queue depth and load average are read: the
// limit reacts to sustained load, not to one request.
const loadCacheTTL = 5 * time.Second

// window is a per-user sliding log of upload times, in this process: the
// window when no Config.SharedLimits is set or while it fails. NOTE: alone,
// several api processes each enforce the limit on what they see.
type window struct {
	mu    sync.Mutex
	users map[string][]time.Time
}

func newWindow() *window { return &window{users: map[string][]time.Time{}} }

// take counts one upload for user at now when fewer than limit happened in
// the last span, and reports whether it did.
func (w *window) take(user string, now time.Time, span time.Duration, limit int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.users) > 100_000 {
		w.sweep(now, span)
	}
	log := w.users[user]
	cut := 0
	for cut < len(log) && now.Sub(log[cut]) >= span {
		cut++
	}
	log = log[cut:]
	if len(log) >= limit {
		w.users[user] = log
		return false
	}
	w.users[user] = append(log, now)
	return true
}

func (w *window) sweep(now time.Time, span time.Duration) {
	for u, log := range w.users {
		if len(log) == 0 || now.Sub(log[len(log)-1]) >= span {
			delete(w.users, u)
		}
	}
}

// loadFactor is the decisions.md rule: queue depth above 50/100/200 and
// load average per CPU above 1.5/2/3 multiply the per-user limit by
// 0.5/0.25/0.1; the lower factor wins.
func loadFactor(queueDepth int, loadPerCPU float64) float64 {
	f := 1.0
	switch {
	case queueDepth > 200:
		f = 0.1
	case queueDepth > 100:
		f = 0.25
	case queueDepth > 50:
		f = 0.5
	}
	switch {
	case loadPerCPU > 3:
		f = math.Min(f, 0.1)
	case loadPerCPU > 2:
		f = math.Min(f, 0.25)
	case loadPerCPU > 1.5:
		f = math.Min(f, 0.5)
	}
	return f
}

// effectiveLimit applies the factor and never goes below one upload.
func effectiveLimit(base int, factor float64) int {
	n := int(math.Floor(float64(base) * factor))
	if n < 1 {
		return 1
	}
	return n
}

// loadGauge caches the two load signals.
type loadGauge struct {
	depth func(ctx context.Context) (int, error)
	load  func() float64
	now   func() time.Time

	mu     sync.Mutex
	at     time.Time
	factor float64
}

func (g *loadGauge) current(ctx context.Context) float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if !g.at.IsZero() && now.Sub(g.at) < loadCacheTTL {
		return g.factor
	}
	depth := 0
	if g.depth != nil {
		if d, err := g.depth(ctx); err == nil {
			depth = d
		}
	}
	var load float64
	if g.load != nil {
		load = g.load()
	}
	g.factor, g.at = loadFactor(depth, load), now
	return g.factor
}

// procLoadPerCPU reads the one-minute load average per CPU (0 when the
// platform has no /proc/loadavg).
func procLoadPerCPU() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0
	}
	return v / float64(runtime.GOMAXPROCS(0))
}
