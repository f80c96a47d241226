package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"docflow/storage/postgres"
)

// A side of benchRecordingCost is a pipeline worker in a process of its
// own: docflow-bench started again as "cost-child", its spec as JSON on
// the command line. It starts a worker (newPipeBenchEnv, warm-up
// included), prints "ready", and at the "go" line on its standard input
// starts ingesting, a hundred documents whenever fewer than Backlog are
// unfinished, and counts the runs completed within Window, on the
// database's clock; it prints a costChildResult as JSON and exits.
//
// NOTE: fed, not given its documents at once: the engine takes a backlog
// step by step (every document's first step, then every second one), so
// from a backlog of thousands no run completes for many seconds, and a
// window would count when the bulk of them happened to complete.
//
// NOTE: two sides, one with recording on and one with it off, run at the
// same time on the same cores, so each sees the same machine at every
// moment. Run one after the other, they did not: on these shared machines
// the CPU time one document costs moved by a fifth from one 15-second run
// to the next, docflow and PostgreSQL alike, so that pairs of identical
// runs (recording on in both) measured 0.91–1.32 and a median of twelve
// pairs was a draw at the 3 % that was to be shown.
type costChildSpec struct {
	Env     []string      // the worker's settings, as key, value pairs
	Backlog int           // unfinished documents kept at least
	Window  time.Duration // how long the count runs
	// Profile, when set, is a path prefix: the child writes its CPU,
	// mutex, block, heap and allocation profiles of the window to
	// Profile+"-cpu.pb" and so on (BENCH_COST_PROFILE).
	Profile string
}

type costChildResult struct {
	Done int // runs completed within the window
	// CPU milliseconds per completed run within the window: this process,
	// and the PostgreSQL backends of its database.
	ProcCPUms, PGCPUms float64
	// GCms is the part of ProcCPUms the Go collector took.
	GCms float64
	Err  string
}

// costChild is the child's side of the protocol; it returns the exit code.
func costChild(args []string) int {
	var spec costChildSpec
	if len(args) != 1 || json.Unmarshal([]byte(args[0]), &spec) != nil {
		fmt.Fprintln(os.Stderr, "usage: docflow-bench cost-child SPEC (started by the analytics section)")
		return 2
	}
	res, err := runCostChild(spec, os.Stdin, os.Stdout)
	if err != nil {
		res.Err = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

func runCostChild(spec costChildSpec, in io.Reader, out io.Writer) (costChildResult, error) {
	ctx := context.Background()
	b, err := newPipeBenchEnv(ctx, spec.Env...)
	if err != nil {
		return costChildResult{}, err
	}
	defer b.close()
	b.db.Checkpoint(ctx) //nolint:errcheck // as benchPipelineThroughput
	fmt.Fprintln(out, "ready")
	if line, err := bufio.NewReader(in).ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		return costChildResult{}, fmt.Errorf("waiting for go: %q, %v", line, err)
	}
	start, err := b.db.ClockTimestamp(ctx)
	if err != nil {
		return costChildResult{}, err
	}
	wallStart := time.Now()
	stopProfiles, err := startProfiles(spec.Profile)
	if err != nil {
		return costChildResult{}, err
	}
	pg0 := b.backendCPU(ctx, nil)
	proc0, gc0 := processCPU(), gcCPU()
	files := postgres.NewFileStore(b.db)
	var runs []string
	for end := wallStart.Add(spec.Window); time.Now().Before(end); {
		open, err := files.CountUnfinishedRuns(ctx)
		if err != nil {
			return costChildResult{}, err
		}
		if open < spec.Backlog {
			runs = append(runs, b.ingestN(ctx, 100)...)
			continue
		}
		time.Sleep(min(20*time.Millisecond, time.Until(end)))
	}
	proc, gc := processCPU()-proc0, gcCPU()-gc0
	if err := stopProfiles(); err != nil {
		return costChildResult{}, err
	}
	var pg time.Duration
	for _, d := range b.backendCPU(ctx, pg0) {
		pg += d
	}
	done, err := b.db.RunsCompletedBy(ctx, runs, start.Add(spec.Window))
	if err != nil {
		return costChildResult{}, err
	}
	per := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(max(done, 1)) }
	return costChildResult{Done: done, ProcCPUms: per(proc), PGCPUms: per(pg), GCms: per(gc)}, nil
}

// gcCPU is the CPU time the Go collector has taken in this process, as
// the runtime estimates it.
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

// startProfiles starts a CPU profile and the mutex and block profiles when
// prefix is set; the function it returns writes them, and the heap's
// (live at the last collection, and allocated since the start).
func startProfiles(prefix string) (func() error, error) {
	if prefix == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(prefix + "-cpu.pb")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	runtime.SetMutexProfileFraction(10)
	runtime.SetBlockProfileRate(int(10 * time.Microsecond))
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return err
		}
		for _, name := range []string{"mutex", "block", "heap", "allocs"} {
			out, err := os.Create(prefix + "-" + name + ".pb")
			if err != nil {
				return err
			}
			err = pprof.Lookup(name).WriteTo(out, 0)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// costSide is a running child.
type costSide struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Reader
	stderr *bytes.Buffer
}

func startCostSide(ctx context.Context, spec costChildSpec) (*costSide, error) {
	arg, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "cost-child", string(arg))
	s := &costSide{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = s.stderr
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.lines = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// next returns the child's next line of output.
func (s *costSide) next() (string, error) {
	line, err := s.lines.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("cost child: %w (its stderr: %s)", err, tail(s.stderr.String(), 2000))
	}
	return strings.TrimSpace(line), nil
}

// result reads the child's result and waits for it to exit.
func (s *costSide) result() (costChildResult, error) {
	var res costChildResult
	line, err := s.next()
	if err == nil {
		err = json.Unmarshal([]byte(line), &res)
	}
	if werr := s.cmd.Wait(); err == nil && werr != nil {
		err = fmt.Errorf("cost child: %w (its stderr: %s)", werr, tail(s.stderr.String(), 2000))
	}
	if err == nil && res.Err != "" {
		err = errors.New(res.Err)
	}
	return res, err
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// runCostRound runs the sides at once: each starts its worker, and when
// both are ready they start together.
func runCostRound(ctx context.Context, specs ...costChildSpec) ([]costChildResult, error) {
	sides := make([]*costSide, 0, len(specs))
	defer func() {
		for _, s := range sides {
			s.cmd.Process.Kill() //nolint:errcheck // gone already when it finished
		}
	}()
	for _, spec := range specs {
		s, err := startCostSide(ctx, spec)
		if err != nil {
			return nil, err
		}
		sides = append(sides, s)
	}
	for _, s := range sides {
		if line, err := s.next(); err != nil {
			return nil, err
		} else if line != "ready" {
			// The child failed before it was ready: its result says why.
			var res costChildResult
			if json.Unmarshal([]byte(line), &res) == nil && res.Err != "" {
				return nil, errors.New(res.Err)
			}
			return nil, fmt.Errorf("cost child said %q", line)
		}
	}
	for _, s := range sides {
		if _, err := io.WriteString(s.stdin, "go\n"); err != nil {
			return nil, err
		}
	}
	out := make([]costChildResult, len(sides))
	for i, s := range sides {
		var err error
		if out[i], err = s.result(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
