package proc

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"docflow"
)

func withMemoryLimit(t *testing.T, n int64) {
	old := MemoryLimit()
	SetMemoryLimit(n)
	t.Cleanup(func() { SetMemoryLimit(old) })
}

func shell(t *testing.T) string {
	t.Helper()
	sh, err := Look("sh")
	if err != nil {
		t.Skip(err)
	}
	return sh
}

// TestMemoryLimitApplied: every tool runs under an address-space limit,
// TOOL_MEMORY_LIMIT's 1 GiB unless set otherwise; 0 lifts it.
func TestMemoryLimitApplied(t *testing.T) {
	sh := shell(t)
	if MemoryLimit() != DefaultMemoryLimit || DefaultMemoryLimit != 1<<30 {
		t.Fatalf("default limit %d", MemoryLimit())
	}
	ulimit := func() string {
		t.Helper()
		res, err := Run(context.Background(), Cmd{Path: sh, Args: []string{"-c", "ulimit -v"}})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	if got := ulimit(); got != "1048576" { // KiB
		t.Fatalf("default: ulimit -v = %q", got)
	}
	withMemoryLimit(t, 256<<20)
	if got := ulimit(); got != "262144" {
		t.Fatalf("256 MiB: ulimit -v = %q", got)
	}
	SetMemoryLimit(0)
	if got := ulimit(); got != "unlimited" {
		t.Fatalf("no limit: ulimit -v = %q", got)
	}
}

// TestMemoryExhausted: a tool that needs more than the limit fails, and
// the error says that the memory limit stopped it and how to raise it; a
// tool that reports running out of memory fails even when it exits 0.
// Within the limit it runs, and its peak memory shows in Stats.
func TestMemoryExhausted(t *testing.T) {
	sh := shell(t)
	withMemoryLimit(t, 256<<20)
	ctx := context.Background()
	// The shell holds the output of the command substitution in memory.
	alloc := func(mb int) Cmd {
		return Cmd{Path: sh, Args: []string{"-c", fmt.Sprintf(`x=$(head -c %d /dev/zero | tr '\0' a); echo ${#x}`, mb<<20)}}
	}
	_, err := Run(ctx, alloc(600))
	if err == nil {
		t.Fatal("600 MiB held under a 256 MiB limit")
	}
	// The shell dies of a segmentation fault when it cannot grow.
	msg := docflow.ErrorMessage(err)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(msg, "out of memory") ||
		!strings.Contains(msg, "256 MiB") || !strings.Contains(msg, "TOOL_MEMORY_LIMIT") {
		t.Fatalf("error %v (code %s)", err, docflow.ErrorCode(err))
	}
	t.Log(msg)

	// A wrapper script reports its tool's abort as exit status 134.
	_, err = Run(ctx, Cmd{Path: sh, Args: []string{"-c", "exit 134"}})
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "aborted") {
		t.Fatalf("exit status 134: %v", err)
	}
	// An ordinary failure stays what it was.
	if _, err = Run(ctx, Cmd{Path: sh, Args: []string{"-c", "echo bad >&2; exit 3"}}); docflow.ErrorCode(err) != docflow.EINTERNAL {
		t.Fatalf("exit status 3: %v", err)
	}
	_, err = Run(ctx, Cmd{Path: sh, Args: []string{"-c", "echo 'Out of memory' >&2; exit 0"}})
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), "TOOL_MEMORY_LIMIT") {
		t.Fatalf("out of memory with exit status 0: %v", err)
	}

	res, err := Run(ctx, alloc(64))
	if err != nil || strings.TrimSpace(string(res.Stdout)) != fmt.Sprint(64<<20) {
		t.Fatalf("64 MiB under 256 MiB: %v %q", err, res.Stdout)
	}
	if u := Stats()["sh"]; u.MaxRSS < 64<<20 || u.MaxRSS > 256<<20 {
		t.Fatalf("peak memory %d", u.MaxRSS)
	}
}
