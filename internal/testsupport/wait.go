// Package testsupport holds what tests of many packages share: waiting
// for a condition here, the servers they talk to in its subpackages.
package testsupport

import (
	"testing"
	"time"
)

// WaitFor polls cond until it holds, and fails the test (naming what it
// waited for) once d passes without it. The first polls come quickly and
// then every 50 ms, so a condition that soon holds is seen at once and a
// slow one costs little.
//
// d bounds a hang, it is not a timing to assert: give a minute or more,
// since a machine running the suite beside other work (make test-stress)
// is slower than an idle one by far more than any margin would guess, and
// a condition that holds returns at once whatever d is.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
