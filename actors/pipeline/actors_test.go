package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"docflow"
)

// The router and every step type are kinds of recovered actors: a step
// type has as many actors as its pool size, and Stop stops them all.
func TestStepsAndRoutingRunOnActors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.PoolSizes = map[string]int{docflow.StepTest: 2} })
	reg := e.Actors.Registry
	for _, id := range []string{"0", fmt.Sprint(routerActors - 1)} {
		if reg.GetPID("router", id) == nil {
			t.Fatalf("no router actor %s", id)
		}
	}
	for id, want := range map[string]bool{"0": true, "1": true, "2": false} {
		if got := reg.GetPID("step-"+docflow.StepTest, id) != nil; got != want {
			t.Fatalf("step actor %s: %v, want %v", id, got, want)
		}
	}
	p := e.pipeline("actors", map[string]any{"sleep_ms": 20}, map[string]any{})
	var ids []int64
	for i := range 6 {
		id, _ := e.ingest(fmt.Sprintf("a%d.pdf", i), fmt.Sprint("a", i), &p.ID, nil)
		ids = append(ids, id)
	}
	for id, s := range e.waitTerminal(time.Minute, ids...) {
		if s != docflow.StatusCompleted {
			t.Fatalf("file %d: %s", id, s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Engine.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if reg.GetPID("router", "0") != nil || reg.GetPID("step-"+docflow.StepTest, "0") != nil {
		t.Fatal("actors still registered after Stop")
	}
}
