package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// Environment of the worker process TestIMAPWorkerProcess runs as.
const (
	envWorkerDB  = "DOCFLOW_IMAP_WORKER_DB"
	envWorkerDir = "DOCFLOW_IMAP_WORKER_DIR"
)

// TestIMAPWorkerProcess is the worker that TestIMAPExactlyOnceThroughKills
// starts as a process of its own (this test binary) and kills; run
// directly it skips. The outbox stays unpublished: the drill measures
// ingestion, not the pipeline.
func TestIMAPWorkerProcess(t *testing.T) {
	url := os.Getenv(envWorkerDB)
	if url == "" {
		t.Skip("run by TestIMAPExactlyOnceThroughKills")
	}
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, 16)
	if err != nil {
		t.Fatal(err)
	}
	a, err := apptest.Start(ctx, apptest.Options{Role: "worker", DB: db, Workdir: os.Getenv(envWorkerDir), NoRelay: true,
		Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	fmt.Println("worker ready")
	select {} // until killed
}

type workerProc struct {
	cmd *exec.Cmd
	log string
}

func startWorker(t *testing.T, url, dir string, n int) *workerProc {
	t.Helper()
	log := filepath.Join(dir, fmt.Sprintf("worker-%d.log", n))
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestIMAPWorkerProcess$", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), envWorkerDB+"="+url, envWorkerDir+"="+dir)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	w := &workerProc{cmd: cmd, log: log}
	t.Cleanup(func() { w.kill() })
	return w
}

func (w *workerProc) kill() {
	if w.cmd.ProcessState == nil {
		w.cmd.Process.Signal(syscall.SIGKILL) //nolint:errcheck
		w.cmd.Wait()                          //nolint:errcheck
	}
}

// TestIMAPExactlyOnceThroughKills delivers mails with 1–3 attachments each
// to Dovecot, runs a worker process that takes them in, kills it with
// SIGKILL a third of the way and starts another, restarts Dovecot while
// that one takes mail in, delivers more mail to the idling worker, and checks
// that every attachment became exactly one document and every mail is
// flagged seen.
func TestIMAPExactlyOnceThroughKills(t *testing.T) {
	t.Parallel()
	mails := 500
	if testing.Short() {
		mails = 60
	}
	if v, _ := strconv.Atoi(os.Getenv("IMAP_E2E_MAILS")); v > 0 {
		mails = v
	}
	ctx := context.Background()
	d := imaptest.StartDovecot(t, map[string]string{"alice": "secret"})
	db, cleanup, err := postgres.OpenTestDB(ctx, "imap")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	dir, err := os.MkdirTemp("", "docflow-imap-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cipher, _ := postgres.NewCipher(apptestSecret)
	store := postgres.NewSourceStore(db, cipher)
	host, port, _ := net.SplitHostPort(d.Addr)
	p, _ := strconv.Atoi(port)
	in := &docflow.Integration{OwnerID: "user-1", Direction: docflow.DirectionSource, IntegrationType: "IMAP", Name: "inbox",
		Config:      map[string]any{"host": host, "port": p, "security": "none", "poll_interval": 10},
		Credentials: map[string]string{"username": "alice", "password": "secret"}, IsActive: true}
	if err := store.AddSourceFixture(ctx, in); err != nil {
		t.Fatal(err)
	}

	build := func(from, to int) ([][]byte, int) {
		var out [][]byte
		atts := 0
		for i := from; i < to; i++ {
			var as []imaptest.Attachment
			for j := 0; j <= i%3; j++ {
				as = append(as, imaptest.Attachment{Name: fmt.Sprintf("doc-%d-%d.pdf", i, j), ContentType: "application/pdf",
					Data: imaptest.PDF(fmt.Sprintf("mail %d attachment %d", i, j), 2000)})
			}
			atts += len(as)
			msgID := fmt.Sprintf("mail-%d@example.com", i)
			if i%10 == 9 {
				msgID = "" // deduplicated by UIDVALIDITY and UID
			}
			out = append(out, imaptest.Mail(msgID, fmt.Sprintf("mail %d", i), as...))
		}
		return out, atts
	}
	late := mails / 10
	first, want := build(0, mails-late)
	if err := imaptest.Append(ctx, d.Addr, "alice", "secret", "INBOX", first...); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		n, a, err := store.CountMailFiles(ctx, in.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n != a {
			t.Fatalf("%d files for %d attachments taken in", n, a)
		}
		return n
	}
	waitCount := func(n int, within time.Duration, logs ...*workerProc) {
		t.Helper()
		end := time.Now().Add(within)
		for count() < n {
			if time.Now().After(end) {
				for _, w := range logs {
					b, _ := os.ReadFile(w.log)
					t.Logf("%s:\n%s", w.log, tail(b, 3000))
				}
				t.Fatalf("%d of %d documents after %v", count(), n, within)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	w1 := startWorker(t, db.URL, dir, 1)
	waitCount(want/3, 3*time.Minute, w1)
	w1.kill()
	killedAt := count()
	t.Logf("worker killed with SIGKILL at %d of %d documents", killedAt, want)

	w2 := startWorker(t, db.URL, dir, 2)
	// Dovecot goes down while the second worker is busy taking mail in.
	waitCount(killedAt+want/20, 3*time.Minute, w2)
	d.Stop()
	stoppedAt := count()
	t.Logf("Dovecot stopped at %d of %d documents", stoppedAt, want)
	if stoppedAt >= want {
		t.Log("NOTE: the worker was done before Dovecot stopped; the restart drill covered an idle connection only")
	}
	time.Sleep(time.Second)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	waitCount(want, 3*time.Minute, w2)

	// The worker idles now: late mail arrives through IDLE.
	more, moreAtts := build(mails-late, mails)
	if err := imaptest.Append(ctx, d.Addr, "alice", "secret", "INBOX", more...); err != nil {
		t.Fatal(err)
	}
	want += moreAtts
	waitCount(want, 2*time.Minute, w2)
	time.Sleep(time.Second) // a duplicate would show up now
	if n := count(); n != want {
		t.Fatalf("%d documents, want %d", n, want)
	}
	testsupport.WaitFor(t, 3*time.Minute, "every mail flagged seen", func() bool {
		total, unseen, err := imaptest.Count(d.Addr, "alice", "secret", "INBOX")
		return err == nil && total == uint32(mails) && unseen == 0
	})
	st, lastErr, _, err := store.SourceRow(ctx, in.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status %+v, last error %v", st, lastErr)
}

const apptestSecret = "tttttttttttttttttttttttttttttttttttttttt"

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
