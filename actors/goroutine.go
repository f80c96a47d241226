package actors

import (
	"fmt"

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
