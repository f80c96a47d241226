package actors

import (
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow/internal/testsupport"
)

// TestNewEngineBridgesLogs: hollywood's own logs (here: a duplicate actor
// id) come out of the zerolog logger given to NewEngine.
func TestNewEngineBridgesLogs(t *testing.T) {
	var logs testsupport.LogBuffer
	e, err := NewEngine(zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	noop := func(*actor.Context) {}
	e.SpawnFunc(noop, "dup", actor.WithID("1"))
	e.SpawnFunc(noop, "dup", actor.WithID("1"))
	testsupport.WaitFor(t, time.Minute, "bridged hollywood log", func() bool {
		return strings.Contains(logs.String(), `"component":"actor-engine"`) &&
			strings.Contains(logs.String(), "already claimed")
	})
}
