package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow/storage/postgres"
)

// bareServer is the baseline: a fasthttp handler returning a constant.
func bareServer(args []string) {
	fs := flag.NewFlagSet("bare-server", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	fs.Parse(args) //nolint:errcheck
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	body := []byte(`{"status":"ok"}` + "\n")
	fasthttp.Serve(ln, func(c *fasthttp.RequestCtx) { //nolint:errcheck
		c.SetContentType("application/json")
		c.SetBody(body)
	})
}

// startProcess starts a command that prints its address on the first
// stdout line (bare-server), or waits for url to answer.
func startProcess(ctx context.Context, env []string, waitURL string, name string, args ...string) (*exec.Cmd, string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = nil
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	if waitURL == "" {
		buf := make([]byte, 128)
		n, err := out.Read(buf)
		if err != nil {
			cmd.Process.Kill() //nolint:errcheck
			return nil, "", err
		}
		return cmd, strings.TrimSpace(string(buf[:n])), nil
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(waitURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return cmd, "", nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	cmd.Process.Kill() //nolint:errcheck
	return nil, "", fmt.Errorf("%s did not become ready at %s", name, waitURL)
}

func stopProcess(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	cmd.Process.Signal(os.Interrupt) //nolint:errcheck
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill() //nolint:errcheck
	}
}

// rssMiB reads the resident set size of a process.
func rssMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS")
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// benchDB creates a fresh database for a benchmark and returns its URL.
func benchDB(ctx context.Context, name string) (string, func(), error) {
	db := fmt.Sprintf("docflow_bench_%s_%d", name, time.Now().UnixNano()%1e9)
	cleanup, err := postgres.CreateBenchDatabase(ctx, "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", db)
	if err != nil {
		return "", nil, err
	}
	return "postgres://postgres@127.0.0.1:5432/" + db + "?sslmode=disable", cleanup, nil
}

// apiProbeRounds is how many times the bare handler's and the probe's
// loads alternate: each takes its share of the time in turn, so that what
// else the machine runs weighs on both alike.
const apiProbeRounds = 5

func benchAPI(ctx context.Context, r *Report, o *options) error {
	dur := 5 * time.Second
	if o.quick {
		dur = 2 * time.Second
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	bare, addr, err := startProcess(ctx, nil, "", self, "bare-server")
	if err != nil {
		return fmt.Errorf("bare server: %w", err)
	}
	defer stopProcess(bare)

	dbURL, cleanup, err := benchDB(ctx, "api")
	if err != nil {
		return err
	}
	defer cleanup()
	listen, err := freePort()
	if err != nil {
		return err
	}
	env := []string{"DATABASE_URL=" + dbURL, "LISTEN_ADDR=" + listen, "WORKDIR=" + o.workdir + "/api",
		"AUTH_ENABLED=true", "RATE_LIMITING_ENABLED=false", "LOG_LEVEL=warn"}
	svc, _, err := startProcess(ctx, env, "http://"+listen+"/api/diagnostic/healthz/ready", o.bin, "serve")
	if err != nil {
		return err
	}
	defer stopProcess(svc)
	time.Sleep(3 * time.Second) // idle: let start-up garbage settle
	rss, err := rssMiB(svc.Process.Pid)
	if err != nil {
		return err
	}
	r.AtMost("api", "resident memory of an idle docflow serve", rss, "MiB", 100)

	// The bare handler and the probe in turns; each figure is its
	// requests over its time in all rounds.
	var base, live loadResult
	var rounds []string
	for range apiProbeRounds {
		b, err := load(ctx, "http://"+addr+"/", 64, dur/apiProbeRounds, nil)
		if err != nil {
			return fmt.Errorf("bare load: %w", err)
		}
		l, err := load(ctx, "http://"+listen+"/api/diagnostic/healthz/live", 64, dur/apiProbeRounds, nil)
		if err != nil {
			return fmt.Errorf("healthz/live load: %w", err)
		}
		base.Requests, base.Duration = base.Requests+b.Requests, base.Duration+b.Duration
		live.Requests, live.Duration = live.Requests+l.Requests, live.Duration+l.Duration
		rounds = append(rounds, fmt.Sprintf("%.2f", l.RPS/b.RPS))
	}
	base.RPS = float64(base.Requests) / base.Duration.Seconds()
	live.RPS = float64(live.Requests) / live.Duration.Seconds()
	r.Ratio("api", "GET /api/diagnostic/healthz/live, 64 connections", live.RPS, base.RPS, "req/s", 0.6)
	infoLine(r, "api", "  each round's ratio", strings.Join(rounds, " "))

	token := "dfl_benchbenchbenchbenchbenchbenchbenchbenc"
	sum := sha256.Sum256([]byte(token))
	if err := postgres.InsertBenchToken(ctx, dbURL, token[:12], hex.EncodeToString(sum[:])); err != nil {
		return err
	}
	auth := "Bearer " + token
	tl, err := load(ctx, "http://"+listen+"/api/api-tokens/", 64, dur, func(req *fasthttp.Request) {
		req.Header.Set("Authorization", auth)
	})
	if err != nil {
		return fmt.Errorf("token list load: %w", err)
	}
	r.AtLeast("api", "GET /api/api-tokens/ (bearer, Postgres read), 64 conns", tl.RPS, "req/s", 5000)
	r.AtMost("api", "GET /api/api-tokens/ p99", millis(tl.P99), "ms", 20)
	return nil
}
