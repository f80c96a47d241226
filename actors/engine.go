package actors

import (
	"fmt"
	"log/slog"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"
)

// NewEngine builds the process's actor engine and routes hollywood's logs to
// log.
//
// NOTE: hollywood v1.0.5 logs through slog's package-level functions only, so
// NewEngine points slog's default logger at log: the one process-wide setting
// it changes. Build one engine per process (cmd/docflow does).
func NewEngine(log zerolog.Logger) (*actor.Engine, error) {
	slog.SetDefault(slog.New(NewSlogHandler(log)))
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, fmt.Errorf("new actor engine: %w", err)
	}
	return e, nil
}

// SpawnOpts are the options every docflow actor is spawned with: the Recover
// middleware first (so it also covers the middleware in extra), then extra.
func SpawnOpts(log zerolog.Logger, extra ...actor.OptFunc) []actor.OptFunc {
	return append([]actor.OptFunc{actor.WithMiddleware(Recover(log))}, extra...)
}
