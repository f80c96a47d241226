package chaos

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChaosShort is the short form of `make chaos`: 150 documents under
// every kind of fault once at least, then the invariants. CHAOS_DOCS
// changes the count, CHAOS_SEED repeats a run's choices, CHAOS_KEEP=1
// keeps the run's folder (logs of every process) whatever the result.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite runs six docflow processes and their servers for about two minutes; skipped under -short")
	}
	if os.Getenv("DOCFLOW_CHAOS") == "" {
		t.Skip("the short chaos run loads both cores for two minutes: make test runs it on its own after the other tests, `make chaos-short` alone (DOCFLOW_CHAOS=1), `make chaos` the full run")
	}
	if os.Geteuid() != 0 {
		t.Log("NOTE: not root: Dovecot cannot run, the workload sends no mail")
	}
	bin := buildDocflow(t)
	docs := 150
	if v, _ := strconv.Atoi(os.Getenv("CHAOS_DOCS")); v > 0 {
		docs = v
	}
	seed, _ := strconv.ParseUint(os.Getenv("CHAOS_SEED"), 10, 64)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Docs: docs, Bin: bin, Short: true, Seed: seed, Keep: os.Getenv("CHAOS_KEEP") != "",
		Log: testWriter{t}})
	var b strings.Builder
	rep.Print(&b)
	t.Log(b.String())
	if err != nil {
		t.Fatalf("the run could not be carried out: %v (logs in %s)", err, rep.Dir)
	}
	for _, k := range FaultKinds {
		if rep.Faults[k] == 0 && !(k == FaultStopClickHouse && strings.Contains(strings.Join(rep.Notes, " "), "ClickHouse did not start")) {
			t.Errorf("fault %q never injected", k)
		}
	}
	if !rep.OK() {
		t.Errorf("invariants failed; every process's log is in %s/logs", rep.Dir)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// buildDocflow builds cmd/docflow (without the race detector: the run
// measures the deployment, and six race-instrumented processes would not
// fit two cores) into the user's cache folder, one binary per clone, so
// that a later run skips the link when nothing changed.
func buildDocflow(t *testing.T) string {
	t.Helper()
	root, err := moduleRoot(".")
	if err != nil {
		t.Skip(err.Error())
	}
	bin := filepath.Join(t.TempDir(), "docflow")
	if cache, err := os.UserCacheDir(); err == nil {
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(cache, "docflow-test", hex.EncodeToString(sum[:6]))
		if os.MkdirAll(dir, 0o755) == nil {
			bin = filepath.Join(dir, "docflow-chaos-target")
		}
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/docflow")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/docflow: %v\n%s", err, out)
	}
	return bin
}
