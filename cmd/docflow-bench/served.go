package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"docflow/storage/postgres"
)

// served is a `docflow serve` process the benchmark started, as a user
// runs it: the binary of -docflow, a throwaway database, a WORKDIR of its
// own and the embedded broker and index. Its output goes to serve.log in
// its WORKDIR, each start appended.
type served struct {
	bin, workdir, url, metricsToken string
	env                             []string
	cmd                             *exec.Cmd
	exited                          chan struct{}
	starts                          int
	// clientConns, when set, counts the benchmark's own connections to
	// the process, which the sampler leaves out of its sockets.
	clientConns func() int
}

// newServed prepares a serve process on dbURL with WORKDIR workdir; env
// adds settings (KEY=value). METRICS_TOKEN is set so that GET /metrics
// can be read whatever AUTH_ENABLED says.
func newServed(bin, dbURL, workdir string, env ...string) (*served, error) {
	listen, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workdir, 0o750); err != nil {
		return nil, err
	}
	s := &served{bin: bin, workdir: workdir, url: "http://" + listen, metricsToken: "bench-metrics-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	s.env = append([]string{"DATABASE_URL=" + dbURL, "LISTEN_ADDR=" + listen, "WORKDIR=" + workdir,
		"SESSION_SECRET=" + strings.Repeat("b", 40), "METRICS_TOKEN=" + s.metricsToken,
		"RATE_LIMITING_ENABLED=false", "LOG_LEVEL=warn"}, env...)
	return s, nil
}

// start starts the process and waits until it is ready (at most 2
// minutes: a first start migrates the database).
func (s *served) start(ctx context.Context) error {
	logf, err := os.OpenFile(s.workdir+"/serve.log", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	s.starts++
	fmt.Fprintf(logf, "\n==== start %d at %s ====\n", s.starts, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start docflow serve: %w", err)
	}
	logf.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() //nolint:errcheck // the exit is seen through exited
	s.cmd, s.exited = cmd, exited
	deadline := time.Now().Add(2 * time.Minute)
	c := &nethttp.Client{Timeout: 5 * time.Second}
	for {
		resp, err := c.Get(s.url + "/api/diagnostic/healthz/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("docflow serve exited before it was ready: %s", s.logTail(2000))
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("docflow serve was not ready after 2 minutes: %s", s.logTail(2000))
		}
	}
}

// pid is the running process's id.
func (s *served) pid() int { return s.cmd.Process.Pid }

// terminate sends SIGTERM and returns the time until the process exited
// and whether it exited on its own within limit (else it is killed).
func (s *served) terminate(limit time.Duration) (time.Duration, bool) {
	if s.cmd == nil {
		return 0, true
	}
	t0 := time.Now()
	s.cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // an exited process is seen below
	select {
	case <-s.exited:
		return time.Since(t0), true
	case <-time.After(limit):
		s.kill()
		return time.Since(t0), false
	}
}

// stop ends the process if it runs (SIGTERM, killed after a minute).
func (s *served) stop() {
	if s.cmd == nil {
		return
	}
	select {
	case <-s.exited:
	default:
		s.terminate(time.Minute)
	}
}

func (s *served) kill() {
	s.cmd.Process.Kill() //nolint:errcheck
	<-s.exited
}

// logTail is the end of the process's log.
func (s *served) logTail(n int) string {
	b, _ := os.ReadFile(s.workdir + "/serve.log")
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// exitedWith says how the last run ended ("" while it runs).
func (s *served) exitedWith() string {
	select {
	case <-s.exited:
		return s.cmd.ProcessState.String()
	default:
		return ""
	}
}

// procSample is what a sample of the serve process reads.
type procSample struct {
	At         time.Time
	RSSMiB     float64
	Goroutines int
	FDs        int // open files, sockets not counted
	Sockets    int // open sockets, the benchmark client's connections not counted
	PGConns    int // connections to its database, the sampler's own excluded
	Unfinished int // runs not yet terminal
	Load1      float64
}

// sampler reads a serve process's resources. Its database handle has one
// connection, which the count of connections leaves out.
type sampler struct {
	s  *served
	db *postgres.DB
}

func newSampler(ctx context.Context, s *served, dbURL string) (*sampler, error) {
	db, err := postgres.Open(ctx, dbURL, 1)
	if err != nil {
		return nil, err
	}
	return &sampler{s: s, db: db}, nil
}

func (p *sampler) close() { p.db.Close() }

func (p *sampler) sample(ctx context.Context) (procSample, error) {
	out := procSample{At: time.Now(), Load1: loadAvg1()}
	pid := p.s.pid()
	var err error
	if out.RSSMiB, err = rssMiB(pid); err != nil {
		return out, err
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		return out, err
	}
	for _, fd := range fds {
		if l, err := os.Readlink(dir + "/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			out.Sockets++
		} else {
			out.FDs++
		}
	}
	if p.s.clientConns != nil {
		out.Sockets -= p.s.clientConns()
	}
	if out.Goroutines, err = p.s.goroutines(ctx); err != nil {
		return out, err
	}
	pids, err := p.db.BackendPIDs(ctx)
	if err != nil {
		return out, err
	}
	out.PGConns = len(pids) - 1
	n, err := postgres.NewFileStore(p.db).CountUnfinishedRuns(ctx)
	if err != nil {
		return out, err
	}
	out.Unfinished = int(n)
	return out, nil
}

// goroutines reads go_goroutines from the process's GET /metrics.
func (s *served) goroutines(ctx context.Context) (int, error) {
	req, _ := nethttp.NewRequestWithContext(ctx, "GET", s.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+s.metricsToken)
	resp, err := (&nethttp.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return 0, fmt.Errorf("GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET /metrics: status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte("go_goroutines ")); ok {
			f, err := strconv.ParseFloat(string(v), 64)
			return int(f), err
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("GET /metrics: no go_goroutines")
}

// loadAvg1 is the machine's one-minute load average (0 when unknown).
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
