package actors

import (
	"fmt"
	"sync"

	"github.com/rs/zerolog"
)

// Go runs fn on a goroutine of its own, as actors do for the I/O they must
// not wait for in Receive (an attempt, a claim, a poll). A panic in fn is
// recovered and logged with its stack, like Recover does for a receive:
// it ends fn, not the process. fn must report its outcome to its actor
// itself (a deferred Send), so that a panic still tells the actor.
func Go(log zerolog.Logger, what string, fn func()) {
	go func() {
		defer func() {
			if v := recover(); v != nil {
				perr := NewPanicError(v)
				log.Error().Str("goroutine", what).Str("panic", fmt.Sprint(v)).
					Str("stack", string(perr.Stack)).Msg("goroutine of an actor panicked")
			}
		}()
		fn()
	}()
}

// Group is the goroutines a service's actors start (with Go), which the
// service's Close waits for. Unlike a bare sync.WaitGroup, whose Add must
// not race with its Wait, Go may be called while Wait runs: an actor still
// receiving while its service closes starts nothing more. Once Wait has
// begun, Go runs nothing and returns false; the work it was given is left
// undone, as a stopping service leaves unacknowledged work for the next
// owner. The zero value is ready to use.
type Group struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// Go runs fn as the package's Go does, counted by Wait, unless Wait has
// begun: then it runs nothing and returns false.
func (g *Group) Go(log zerolog.Logger, what string, fn func()) bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.wg.Add(1)
	g.mu.Unlock()
	Go(log, what, func() {
		defer g.wg.Done()
		fn()
	})
	return true
}

// Wait refuses every later Go and waits for the goroutines started before.
func (g *Group) Wait() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}
