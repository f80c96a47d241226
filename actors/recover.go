package actors

import (
	"fmt"
	"runtime/debug"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"
)

// PanicError is a panic recovered inside an actor (or a job it ran), with
// the stack of the panicking goroutine.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// NewPanicError captures the current stack for a recovered value; call it
// from the deferred function that recovered.
func NewPanicError(v any) *PanicError {
	return &PanicError{Value: v, Stack: debug.Stack()}
}

// Failer is implemented by messages whose sender must learn that handling
// them failed: Recover calls Fail with the *PanicError, so a panic becomes
// an error result instead of a lost message.
type Failer interface {
	Fail(err error)
}

// Recover returns the middleware every docflow actor is spawned with. A
// panic in the receive function (or in any middleware after it) is
// recovered, logged with its stack and turned into an error result: the
// message's Fail method when it is a Failer, else a *PanicError reply to the
// sender when there is one (a Request, or a Send from another actor's
// context). The actor keeps running with its state as the panic left it.
//
// NOTE: the panic must never reach hollywood: v1.0.5 drops the message,
// restarts the actor, never resets the restart counter, and crashes the
// whole process once MaxRestarts is exceeded.
func Recover(log zerolog.Logger) actor.MiddlewareFunc {
	return func(next actor.ReceiveFunc) actor.ReceiveFunc {
		return func(c *actor.Context) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				perr := NewPanicError(v)
				msg := c.Message()
				log.Error().Str("pid", c.PID().String()).Str("message", fmt.Sprintf("%T", msg)).
					Str("panic", fmt.Sprint(v)).Str("stack", string(perr.Stack)).Msg("actor panicked")
				reportPanic(log, c, msg, perr)
			}()
			next(c)
		}
	}
}

func reportPanic(log zerolog.Logger, c *actor.Context, msg any, perr *PanicError) {
	defer func() {
		if v := recover(); v != nil {
			log.Error().Str("pid", c.PID().String()).Str("panic", fmt.Sprint(v)).Msg("reporting a panic panicked")
		}
	}()
	if f, ok := msg.(Failer); ok {
		f.Fail(perr)
		return
	}
	if c.Sender() != nil {
		c.Respond(perr)
	}
}
