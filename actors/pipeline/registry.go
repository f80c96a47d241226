package pipeline

import (
	"fmt"
	"sort"
	"sync"

	"docflow"
)

// Registry maps step types to their implementations. The processing steps
// register here; a step type of the catalogue without an implementation is
// skipped with a log message naming it.
type Registry struct {
	mu    sync.RWMutex
	steps map[string]docflow.Step
}

// NewRegistry returns a registry holding steps (duplicates panic: they are
// programming errors found at start).
func NewRegistry(steps ...docflow.Step) *Registry {
	r := &Registry{steps: map[string]docflow.Step{}}
	for _, s := range steps {
		if err := r.Register(s); err != nil {
			panic(err)
		}
	}
	return r
}

// Register adds s; an error when its type is registered already.
func (r *Registry) Register(s docflow.Step) error {
	if s == nil || s.Type() == "" {
		return fmt.Errorf("register step: nil step or empty type")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.steps[s.Type()]; dup {
		return fmt.Errorf("register step: %s registered twice", s.Type())
	}
	r.steps[s.Type()] = s
	return nil
}

// Lookup returns the implementation of a step type.
func (r *Registry) Lookup(stepType string) (docflow.Step, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	s, ok := r.steps[stepType]
	return s, ok
}

// Types lists the registered step types, sorted.
func (r *Registry) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.steps))
	for t := range r.steps {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// KnownTypes is every step type a run may contain: the catalogue plus the
// registered types (the test step, for one).
func (r *Registry) KnownTypes() []string {
	seen := map[string]bool{}
	out := []string{}
	for _, t := range docflow.StandardSteps {
		seen[t] = true
		out = append(out, t)
	}
	for _, t := range r.Types() {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
