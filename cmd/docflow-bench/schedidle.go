package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// clickhouseServerPID is the pid of the bench's ClickHouse server (the one
// scripts/clickhouse.sh started from CLICKHOUSE_DIR), or 0.
func clickhouseServerPID() int {
	dir := os.Getenv("CLICKHOUSE_DIR")
	if dir == "" {
		dir = "/tmp/docflow-clickhouse"
	}
	b, err := os.ReadFile(dir + "/clickhouse-server.pid")
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// setIdlePriority puts every thread of process pid under SCHED_IDLE (idle
// true: it runs only on CPU time nothing else wants) or back under
// SCHED_NORMAL (SCHED_OTHER) at nice 0. Threads the process starts later inherit the
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
