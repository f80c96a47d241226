package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// shutdownBound is the most `docflow serve` may take from SIGTERM to its
// exit with a backlog queued (docs/benchmarks.md, the busy section).
const shutdownBound = 15 * time.Second

// TestServeShutdownWithABacklog starts `docflow serve` (the binary), queues
// a backlog of documents through the API on a pipeline of test steps,
// sends SIGTERM while the steps work through it, and checks that the
// process exits within shutdownBound, that it left no step claimed (its
// worker's heartbeat is gone, so another may take the steps at once), and
// that a restart brings every document to an end, none failed.
func TestServeShutdownWithABacklog(t *testing.T) {
	// Serial: it picks a free port for the process before the process
	// listens on it.
	if testing.Short() {
		t.Skip("builds and runs docflow serve twice")
	}
	bin := buildServe(t)
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "shutdown")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	// The system default: three test steps; the first takes a while, so
	// that steps are running when SIGTERM comes.
	p := &docflow.Pipeline{Name: "backlog", IsDefault: true, IsActive: true}
	for i, ms := range []float64{200, 20, 20} {
		p.Steps = append(p.Steps, &docflow.PipelineStep{StepType: docflow.StepTest, Label: fmt.Sprint("step ", i), Enabled: true,
			Config: map[string]any{"sleep_ms": ms}})
	}
	if err := postgres.NewPipelineStore(db).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	url := "http://" + addr
	env := []string{"DATABASE_URL=" + db.URL, "WORKDIR=" + t.TempDir(), "LISTEN_ADDR=" + addr, "LOG_LEVEL=info", "LOG_FORMAT=json",
		"SESSION_SECRET=" + strings.Repeat("s", 40), "ENABLE_TEST_STEP=true", "STEP_POOL_SIZES=test=16", "RATE_LIMITING_ENABLED=false"}
	serve := startServe(t, bin, env, url, "serve")

	// The backlog: 200 documents from 8 clients.
	const docs = 200
	var wg sync.WaitGroup
	errs := make(chan error, docs)
	for c := range 8 {
		wg.Go(func() {
			for i := c; i < docs; i += 8 {
				if err := uploadDoc(url, fmt.Sprintf("backlog-%03d.txt", i), fmt.Sprintf("document %d of the backlog\n", i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	files := postgres.NewFileStore(db)
	unfinished := func() int {
		n, err := files.CountUnfinishedRuns(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	testsupport.WaitFor(t, 3*time.Minute, "the steps at work", func() bool {
		running, _, err := db.StepsLeftRunning(ctx)
		return err == nil && running > 0
	})
	left := unfinished()

	exit := serve.terminate(t)
	t.Logf("SIGTERM with %d of %d runs unfinished: exited in %s", left, docs, exit.Round(time.Millisecond))
	if exit > shutdownBound {
		t.Errorf("docflow serve took %s to exit after SIGTERM with %d runs unfinished; the bound is %s; its shutdown's log:\n%s",
			exit.Round(time.Millisecond), left, shutdownBound, serve.shutdownLog())
	}
	running, held, err := db.StepsLeftRunning(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if held > 0 {
		t.Errorf("%d of the %d steps left running are still claimed by the stopped process's worker", held, running)
	}

	startServe(t, bin, env, url, "serve again")
	testsupport.WaitFor(t, 2*time.Minute, "every run ended after the restart", func() bool { return unfinished() == 0 })
	done, failed, err := db.RunCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if done != docs || failed != 0 {
		t.Errorf("after the restart %d runs completed and %d failed; want %d and 0", done, failed, docs)
	}
}

// served is a docflow process the test started; its output is kept.
type served struct {
	name   string
	cmd    *exec.Cmd
	out    *bytes.Buffer
	mu     sync.Mutex
	exited chan struct{}
}

func (s *served) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(b)
}

func (s *served) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// startServe starts `bin serve` with env and waits until url is ready.
func startServe(t *testing.T, bin string, env []string, url, name string) *served {
	t.Helper()
	s := &served{name: name, out: &bytes.Buffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s, s
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }() //nolint:errcheck // seen through exited
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Kill() //nolint:errcheck
			<-s.exited
		}
		if t.Failed() {
			out := s.output()
			t.Logf("--- %s output (last 16 KiB):\n%s", name, out[max(0, len(out)-16<<10):])
		}
	})
	testsupport.WaitFor(t, 2*time.Minute, name+" ready", func() bool {
		select {
		case <-s.exited:
			t.Fatalf("%s exited before it was ready: %s", name, s.output())
		default:
		}
		resp, err := nethttp.Get(url + "/api/diagnostic/healthz/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return s
}

// shutdownLog is the process's log from "shutting down" on, without the
// broker's and consumers' chatter: the parts' "closed" lines say which
// part took the time.
func (s *served) shutdownLog() string {
	out := s.output()
	if i := strings.Index(out, `"message":"shutting down"`); i >= 0 {
		out = out[strings.LastIndexByte(out[:i], '\n')+1:]
	}
	var b strings.Builder
	for line := range strings.Lines(out) {
		if strings.Contains(line, `"level":"debug"`) || strings.Contains(line, "consumer group") {
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// terminate sends SIGTERM and returns the time until the process exited
// (it is killed after a minute).
func (s *served) terminate(t *testing.T) time.Duration {
	t.Helper()
	t0 := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		s.cmd.Process.Kill() //nolint:errcheck
		<-s.exited
		t.Errorf("%s had not exited a minute after SIGTERM: killed", s.name)
	}
	return time.Since(t0)
}

// uploadDoc posts a text file to POST /api/upload.
func uploadDoc(url, name, content string) error {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		return err
	}
	fw.Write([]byte(content)) //nolint:errcheck // a bytes.Buffer
	mw.Close()                //nolint:errcheck
	resp, err := nethttp.Post(url+"/api/upload", mw.FormDataContentType(), &body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out) //nolint:errcheck // the status says enough
	if resp.StatusCode != 201 {
		return fmt.Errorf("upload %s: %d %v", name, resp.StatusCode, out)
	}
	return nil
}

// buildServe builds cmd/docflow, with the race detector when the tests
// run with it (so the build reuses the packages go test compiled and only
// links), into the user's cache folder, one binary per clone and flag: a
// later run finds it up to date. The multi-process test of actors/pipeline
// builds the same binary.
func buildServe(t *testing.T) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Skipf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	name := "docflow"
	args := []string{"build"}
	if raceBuild {
		name += "-race"
		args = append(args, "-race")
	}
	bin := filepath.Join(t.TempDir(), name)
	if cache, err := os.UserCacheDir(); err == nil {
		sum := sha256.Sum256([]byte(root))
		dir := filepath.Join(cache, "docflow-test", hex.EncodeToString(sum[:6]))
		if os.MkdirAll(dir, 0o755) == nil {
			bin = filepath.Join(dir, name)
		}
	}
	cmd := exec.Command("go", append(args, "-o", bin, "./cmd/docflow")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/docflow: %v\n%s", err, out)
	}
	return bin
}
