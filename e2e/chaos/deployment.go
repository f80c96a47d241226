package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"docflow/integrations/imap/imaptest"
	"docflow/storage/postgres"
)

// Deployment is the multi-process docflow of a chaos run and what it
// runs on: a private PostgreSQL and ClickHouse, Dovecot, one
// `docflow broker`, the api processes and the workers, sharing one
// WORKDIR.
type Deployment struct {
	Dir     string // the run's folder: work, logs, servers' data
	Work    string // WORKDIR of every docflow process
	Dest    string // LOCAL_DESTINATION_DIR
	Logs    string
	PG      *Postgres
	DBURL   string
	CH      *ClickHouse
	Dovecot *imaptest.Dovecot
	Broker  *Proc
	APIs    []*Proc
	Workers []*Proc
	APIURLs []string
	env     []string
	bin     string
	notes   []string // what could not run as asked, for the report
}

// deployOptions are what the deployment needs from the run.
type deployOptions struct {
	Bin, Root, Dir      string
	APIs, Workers       int
	FilesPort, HookPort int
	Log                 func(format string, args ...any)
}

// deploy starts everything and waits until the APIs answer and the
// workers have reported in.
func deploy(ctx context.Context, o deployOptions) (*Deployment, error) {
	d := &Deployment{Dir: o.Dir, Work: filepath.Join(o.Dir, "work"), Dest: filepath.Join(o.Dir, "destinations"),
		Logs: filepath.Join(o.Dir, "logs"), bin: o.Bin}
	for _, dir := range []string{d.Work, d.Dest, d.Logs} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return d, err
		}
	}
	ports, err := freePorts(5 + o.APIs)
	if err != nil {
		return d, err
	}
	pgPort, chTCP, chHTTP, brokerPort := ports[0], ports[1], ports[2], ports[3]

	o.Log("starting a private PostgreSQL on port %d", pgPort)
	if d.PG, err = startPostgres(ctx, o.Dir, pgPort); err != nil {
		return d, fmt.Errorf("private PostgreSQL: %w", err)
	}
	d.DBURL = d.PG.URL("docflow_chaos")

	o.Log("starting a private ClickHouse on port %d", chTCP)
	chURL := ""
	if d.CH, err = startClickHouse(ctx, o.Root, filepath.Join(o.Dir, "clickhouse"), chTCP, chHTTP); err != nil {
		d.notes = append(d.notes, fmt.Sprintf("ClickHouse did not start, metrics went to PostgreSQL and its outage was not injected: %v", firstLine(err)))
		d.CH = nil
	} else {
		chURL = d.CH.URL("docflow_chaos")
	}

	if os.Geteuid() == 0 {
		if d.Dovecot, err = imaptest.NewDovecot(map[string]string{"chaos": "secret"}); err != nil {
			d.notes = append(d.notes, fmt.Sprintf("Dovecot did not start, no mail was sent: %v", firstLine(err)))
			d.Dovecot = nil
		}
	} else {
		d.notes = append(d.notes, "not run as root: Dovecot cannot run, no mail was sent")
	}

	d.env = []string{
		"DATABASE_URL=" + d.DBURL, "KAFKA_BROKERS=127.0.0.1:" + strconv.Itoa(brokerPort),
		"WORKDIR=" + d.Work, "LOCAL_DESTINATION_DIR=" + d.Dest, "CLICKHOUSE_URL=" + chURL,
		"LOG_LEVEL=info", "LOG_FORMAT=json", "SESSION_SECRET=" + strings.Repeat("c", 40),
		"RATE_LIMITING_ENABLED=false",
		// Quick retries: a fault lasts seconds, and the run must end in
		// minutes, not after the production delays of minutes.
		"STEP_RETRY_DELAYS=1,2,4,8,15", "DESTINATION_RETRY_DELAYS=1,2,4,8,15",
		"WEBHOOK_RETRY_DELAYS=1,2,4,8,15", "WEBHOOK_TIMEOUT=10",
		"URL_FETCH_ALLOWED_HOSTS=127.0.0.1:" + strconv.Itoa(o.FilesPort),
		"WEBHOOK_ALLOWED_HOSTS=127.0.0.1:" + strconv.Itoa(o.HookPort),
		"INTEGRATION_ALLOWED_HOSTS=127.0.0.1",
		// Only the driver's sweep, at the end, removes blobs.
		"BLOB_SWEEP_INTERVAL=0",
	}
	d.Broker = newProc("broker", o.Bin, d.Logs, d.env, "broker", "-port", strconv.Itoa(brokerPort), "-data", filepath.Join(o.Dir, "broker"))
	if err := d.Broker.Start(); err != nil {
		return d, err
	}
	if err := waitFor(ctx, 30*time.Second, "the broker listening", func() bool {
		return answers(ctx, "127.0.0.1:"+strconv.Itoa(brokerPort))
	}); err != nil {
		return d, err
	}
	// Migrate once, before the processes start together.
	if out, err := d.command(ctx, "migrate"); err != nil {
		return d, fmt.Errorf("docflow migrate: %w\n%s", err, out)
	}
	for i := range o.APIs {
		addr := "127.0.0.1:" + strconv.Itoa(ports[5+i])
		env := append(d.env[:len(d.env):len(d.env)], "LISTEN_ADDR="+addr)
		if i > 0 {
			// NOTE: the embedded search index (WORKDIR/search) can be
			// opened by one process only, so each further api process has
			// a WORKDIR of its own, whose blobs are the shared store.
			work := filepath.Join(o.Dir, fmt.Sprintf("work-api-%d", i+1))
			if err := os.MkdirAll(work, 0o755); err != nil {
				return d, err
			}
			if err := os.MkdirAll(filepath.Join(d.Work, "blobs"), 0o750); err != nil {
				return d, err
			}
			if err := os.Symlink(filepath.Join(d.Work, "blobs"), filepath.Join(work, "blobs")); err != nil {
				return d, err
			}
			env = append(env, "WORKDIR="+work)
		}
		p := newProc(fmt.Sprintf("api-%d", i+1), o.Bin, d.Logs, env, "api")
		d.APIs = append(d.APIs, p)
		d.APIURLs = append(d.APIURLs, "http://"+addr)
	}
	for i := range o.Workers {
		d.Workers = append(d.Workers, newProc(fmt.Sprintf("worker-%d", i+1), o.Bin, d.Logs, d.env, "worker"))
	}
	for _, p := range append(append([]*Proc(nil), d.APIs...), d.Workers...) {
		if err := p.Start(); err != nil {
			return d, err
		}
	}
	o.Log("waiting for %d api and %d worker processes", o.APIs, o.Workers)
	hc := newClient(d.APIURLs, time.Minute).http
	for _, base := range d.APIURLs {
		if err := waitFor(ctx, 90*time.Second, base+" ready", func() bool {
			r, err := http.NewRequestWithContext(ctx, "GET", base+"/api/diagnostic/healthz/ready", nil)
			if err != nil {
				return false
			}
			resp, err := hc.Do(r)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 200
		}); err != nil {
			return d, err
		}
	}
	db, err := postgres.Open(ctx, d.DBURL, 2)
	if err != nil {
		return d, err
	}
	defer db.Close()
	err = waitFor(ctx, 90*time.Second, "the workers online", func() bool {
		var n int
		_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM workers WHERE last_seen > now() - interval '10 seconds'`).Scan(&n)
		return n >= o.Workers
	})
	return d, err
}

// command runs a docflow command (migrate, sweep-blobs) with the
// deployment's environment.
func (d *Deployment) command(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Env = append(os.Environ(), d.env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// procs lists the docflow processes.
func (d *Deployment) procs() []*Proc {
	out := []*Proc{d.Broker}
	out = append(out, d.APIs...)
	return append(out, d.Workers...)
}

// heal undoes what a fault left: every docflow process running and not
// stopped, PostgreSQL and ClickHouse up.
func (d *Deployment) heal(ctx context.Context) error {
	var errs []error
	if d.PG != nil {
		if !answers(ctx, "127.0.0.1:"+strconv.Itoa(d.PG.Port)) {
			errs = append(errs, d.PG.Start(ctx))
		}
	}
	if d.CH != nil && !answers(ctx, "127.0.0.1:"+strconv.Itoa(d.CH.TCPPort)) {
		errs = append(errs, d.CH.Start(ctx))
	}
	for _, p := range d.procs() {
		if p == nil {
			continue
		}
		if p.Running() {
			_ = p.Signal(syscall.SIGCONT)
			continue
		}
		errs = append(errs, p.Start())
	}
	return errors.Join(errs...)
}

// Close stops every process and server (SIGTERM, then SIGKILL).
func (d *Deployment) Close() {
	for _, p := range d.procs() {
		if p != nil {
			p.Stop(20 * time.Second)
		}
	}
	if d.Dovecot != nil {
		d.Dovecot.Close()
	}
	if d.CH != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = d.CH.Stop(ctx)
		cancel()
	}
	if d.PG != nil {
		d.PG.Close()
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// hostPort splits a Dovecot address.
func hostPort(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return h, n
}
