// Command testexec runs a test binary for `go test -exec` and, when it
// ends, prints the CPU time it and the processes it waited for used
// (the tools a test starts, such as tesseract), so that the summary of
// `make test TEST_CPU=1` can give each package's CPU beside its wall
// time: on a machine of two cores the suite's wall time is bounded by
// its CPU, and the wall time of one package says little of its own cost.
//
//	go test -exec bin/testexec ./...
//
// The line it prints to standard output, after the binary's own output,
// is
//
//	testexec: cpu 12.34s (user 10.01s, sys 2.33s)
//
// internal/testsummary reads it. Signals sent to testexec are passed on
// to the test binary, and testexec exits as the binary did. A package run
// through -exec is not cached by go test.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testexec test-binary [flags]  (as go test -exec runs it)")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "testexec: %v\n", err)
		os.Exit(1)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	if st := cmd.ProcessState; st != nil {
		fmt.Println(line(st.UserTime(), st.SystemTime()))
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			os.Exit(128 + int(ws.Signal()))
		}
		os.Exit(exit.ExitCode())
	default:
		fmt.Fprintf(os.Stderr, "testexec: %v\n", err)
		os.Exit(1)
	}
}

// prefix begins the line line makes (internal/testsummary reads it).
const prefix = "testexec: cpu "

// line is the line testexec prints for a binary that used user and sys.
func line(user, sys time.Duration) string {
	return fmt.Sprintf("%s%.2fs (user %.2fs, sys %.2fs)", prefix, (user + sys).Seconds(), user.Seconds(), sys.Seconds())
}
