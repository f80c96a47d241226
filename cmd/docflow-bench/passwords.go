package main

import (
	"context"
	"syscall"
	"time"

	"docflow/internal/passwd"
)

// benchPasswords measures what one sign-in costs in password hashing: the
// CPU time of one argon2id hash and one verification with the parameters
// local accounts use (target: at most 100 ms each), and their wall time.
func benchPasswords(_ context.Context, r *Report, o *options) error {
	n := 20
	if o.quick {
		n = 5
	}
	h, err := passwd.Hash("benchmark-password")
	if err != nil {
		return err
	}
	measure := func(f func()) (cpu, wall float64) {
		c0, t0 := cpuTime(), time.Now()
		for range n {
			f()
		}
		return float64(cpuTime()-c0) / float64(time.Millisecond) / float64(n),
			float64(time.Since(t0)) / float64(time.Millisecond) / float64(n)
	}
	hc, _ := measure(func() { passwd.Hash("benchmark-password") })       //nolint:errcheck
	vc, vw := measure(func() { passwd.Verify("benchmark-password", h) }) //nolint:errcheck
	r.AtMost("passwords", "argon2id hash, CPU per password", hc, "ms", 100)
	r.AtMost("passwords", "argon2id verify (one sign-in), CPU per password", vc, "ms", 100)
	r.AtMost("passwords", "argon2id verify, wall time per password", vw, "ms", 100)
	return nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru) //nolint:errcheck
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
