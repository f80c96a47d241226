package proc

import (
	"context"
	"strings"
	"testing"
	"time"

	"docflow"
)

// Run records every run of a tool, finished or failed, in Stats; a
// timeout kills the tool and says so; a missing tool names its package.
func TestRunStatsTimeoutAndMissingTool(t *testing.T) {
	sh, err := Look("sh")
	if err != nil {
		t.Skip(err)
	}
	before := Stats()["sh"]
	ctx := context.Background()
	if _, err := Run(ctx, Cmd{Path: sh, Args: []string{"-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, Cmd{Path: sh, Args: []string{"-c", "echo bad >&2; exit 3"}}); err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("failed run: %v", err)
	}
	start := time.Now()
	// The command would sleep five minutes: a minute bounds a run that
	// ignored its timeout, however slow the machine.
	_, err = Run(ctx, Cmd{Path: sh, Args: []string{"-c", "sleep 300"}, Timeout: 100 * time.Millisecond})
	if docflow.ErrorCode(err) != docflow.ETIMEOUT || time.Since(start) > time.Minute {
		t.Fatalf("timeout: %v after %v", err, time.Since(start))
	}
	after := Stats()["sh"]
	if after.Runs-before.Runs != 3 || after.CPU <= before.CPU || after.Wall-before.Wall < 100*time.Millisecond {
		t.Fatalf("stats before %+v after %+v", before, after)
	}
	if _, err := Look("tesseract-not-here"); docflow.ErrorCode(err) != docflow.EUNAVAILABLE {
		t.Fatalf("missing tool: %v", err)
	}
	if _, err := Look("/nonexistent/pdftoppm"); err == nil || !strings.Contains(docflow.ErrorMessage(err), "poppler-utils") {
		t.Fatalf("missing tool message: %v", err)
	}
}
