package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// processCPU is this process's user+sys CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// pidCPU is the user+sys CPU time of process pid so far, read from
// /proc; false when it cannot be read (the process is gone).
func pidCPU(pid int) (time.Duration, bool) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesised command: utime and stime are the
	// 12th and 13th.
	s := string(st)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	stm, _ := strconv.ParseInt(f[12], 10, 64)
	// NOTE: clock ticks are 100 per second on Linux.
	return time.Duration(ut+stm) * 10 * time.Millisecond, true
}

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

// clickhouseServerCPU is the user+sys CPU time of the bench's ClickHouse
// server, or 0 when it cannot be read.
func clickhouseServerCPU() time.Duration {
	pid := clickhouseServerPID()
	if pid == 0 {
		return 0
	}
	d, _ := pidCPU(pid)
	return d
}
