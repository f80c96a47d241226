package main

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// setIdlePriority puts every thread of process pid under SCHED_IDLE (idle
// true: it runs only on CPU time nothing else wants) or back under
// SCHED_NORMAL at nice 0. Threads the process starts later inherit the
// policy of the thread that starts them.
func setIdlePriority(pid int, idle bool) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return err
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_NORMAL}
	if idle {
		attr.Policy = unix.SCHED_IDLE
	}
	var first error
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && first == nil && err != unix.ESRCH {
			first = fmt.Errorf("thread %d of %d: %w", tid, pid, err)
		}
	}
	return first
}
