package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"docflow/integrations/imap/imaptest"
	"docflow/storage/postgres"
)

// Config shapes a chaos run.
type Config struct {
	// Docs is how many documents the workload puts in (default 150).
	Docs int
	// Bin is the docflow binary the deployment runs. Required.
	Bin string
	// Root is docflow's source tree (scripts/clickhouse.sh); default:
	// found from the working directory upwards.
	Root string
	// Dir is the run's folder (default: a new one under the system's
	// temporary folder); Keep leaves it in place after the run.
	Dir  string
	Keep bool
	// Seed makes the faults' choices and moments repeatable (0: random).
	Seed uint64
	// Short shortens the faults (ClickHouse down 10 s, not a minute) and
	// the workload's pace, for the form `make test` runs.
	Short bool
	// Duration is how long the workload is spread over (default: 45 s in
	// the short form, else Docs/20 seconds); faults are injected all along.
	Duration time.Duration
	// Quiesce bounds the wait for the deployment to finish its work
	// after the last fault (default 5 min, 10 min above 2,000 documents).
	Quiesce time.Duration
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Report is what a run did and found.
type Report struct {
	Faults   map[string]int
	FaultErr []string
	Checks   []Check
	Notes    []string
	Docs     map[string]int // documents put in, by channel
	Retries  int64          // requests sent again with their key
	Replays  int64          // answers replayed from a key
	Reproc   int            // reprocessing requests
	Exits    map[string]int // runs of each process that ended on their own
	Took     time.Duration
	Dir      string
}

// OK reports whether every invariant held.
func (r *Report) OK() bool {
	if len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Print writes the tables of faults injected and invariants checked.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\nchaos run: %d documents (", r.total())
	var parts []string
	for _, ch := range []string{"upload", "url", "email"} {
		parts = append(parts, fmt.Sprintf("%d %s", r.Docs[ch], ch))
	}
	fmt.Fprintf(w, "%s), %d reprocessed, %d requests retried with their key, %d answers replayed, in %v\nfolder: %s\n\n",
		strings.Join(parts, ", "), r.Reproc, r.Retries, r.Replays, r.Took.Round(time.Second), r.Dir)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tINJECTED")
	for _, k := range FaultKinds {
		fmt.Fprintf(tw, "%s\t%d\n", k, r.Faults[k])
	}
	tw.Flush()
	for _, e := range r.FaultErr {
		fmt.Fprintf(w, "  fault error: %s\n", e)
	}
	var exits []string
	for _, name := range sortedKeys(r.Exits) {
		exits = append(exits, fmt.Sprintf("%s ×%d", name, r.Exits[name]))
	}
	if len(exits) > 0 {
		fmt.Fprintf(w, "  exited on their own and started again by the supervisor: %s (see their logs)\n", strings.Join(exits, ", "))
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INVARIANT\tRESULT\tDETAIL")
	for _, c := range r.Checks {
		res := "ok"
		switch {
		case !c.OK:
			res = "FAILED"
		case c.Warn:
			res = "warn"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, res, c.Detail)
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

func (r *Report) total() int {
	n := 0
	for _, v := range r.Docs {
		n += v
	}
	return n
}

// Run deploys docflow, runs the workload under faults, waits for the
// deployment to finish its work and checks the invariants. An error is a
// run that could not be carried out; failed invariants are in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	rep := &Report{Faults: map[string]int{}, Docs: map[string]int{}}
	logw := cfg.Log
	if logw == nil {
		logw = io.Discard
	}
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(logw, "%s chaos: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
	if cfg.Docs <= 0 {
		cfg.Docs = 150
	}
	if cfg.Duration <= 0 {
		cfg.Duration = time.Duration(cfg.Docs) * time.Second / 20
		if cfg.Short {
			cfg.Duration = 45 * time.Second
		}
	}
	if cfg.Quiesce <= 0 {
		cfg.Quiesce = 5 * time.Minute
		if cfg.Docs > 2000 {
			cfg.Quiesce = 10 * time.Minute
		}
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	rep.Notes = append(rep.Notes, fmt.Sprintf("seed %d (CHAOS_SEED repeats the faults' choices; their moments follow the machine)", seed))
	if cfg.Root == "" {
		root, err := moduleRoot(".")
		if err != nil {
			return rep, err
		}
		cfg.Root = root
	}
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "docflow-chaos-")
		if err != nil {
			return rep, err
		}
		cfg.Dir = dir
	}
	// PostgreSQL (run as its own user) and Dovecot pass through it.
	_ = os.Chmod(cfg.Dir, 0o755)
	rep.Dir = cfg.Dir
	defer func() {
		if !cfg.Keep && rep.OK() {
			os.RemoveAll(cfg.Dir)
		}
	}()
	run := fmt.Sprintf("c%d", seed%100000)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	files, filesPort, err := serve(ctx, fileServer())
	if err != nil {
		return rep, err
	}
	hooks := &receiver{}
	hookURL, hookPort, err := serve(ctx, hooks)
	if err != nil {
		return rep, err
	}
	d, err := deploy(ctx, deployOptions{Bin: cfg.Bin, Root: cfg.Root, Dir: cfg.Dir, APIs: 2, Workers: 3,
		FilesPort: filesPort, HookPort: hookPort, Log: logf})
	defer d.Close()
	rep.Notes = append(rep.Notes, d.notes...)
	if err != nil {
		return rep, err
	}
	// A supervisor, as a service manager would be: a process that exits
	// on its own (not by a fault) is started again a second later.
	sctx, stopSupervisor := context.WithCancel(ctx)
	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		for {
			select {
			case <-sctx.Done():
				return
			case <-time.After(time.Second):
			}
			for _, p := range d.procs() {
				if err := p.supervise(); err != nil {
					logf("supervisor: %v", err)
				}
			}
		}
	}()
	defer func() {
		stopSupervisor()
		<-supervised
		rep.Exits = map[string]int{}
		for _, p := range d.procs() {
			if n := p.Exits(); n > 0 {
				rep.Exits[p.Name] = n
			}
		}
	}()
	c := newClient(d.APIURLs, 3*time.Minute)
	if cfg.Short {
		c.giveUp = 90 * time.Second
	}
	hookSub, mailbox, err := configure(ctx, c, d, hookURL)
	if err != nil {
		return rep, err
	}
	logf("deployment up in %v; %d documents over %v", time.Since(start).Round(time.Second), cfg.Docs, cfg.Duration)

	// Faults, all along the workload.
	t := faultTimings{Every: 6 * time.Second, ClickHouse: time.Minute, Pause: 40 * time.Second, Down: 3 * time.Second}
	if cfg.Short {
		t.Every, t.ClickHouse = 5*time.Second, 10*time.Second
	}
	f := &faults{d: d, t: t, rng: rng, log: logf, counts: map[string]int{}, busy: map[*Proc]bool{}}
	fctx, stopFaults := context.WithCancel(ctx)
	faultsDone := make(chan struct{})
	go func() { f.run(fctx); close(faultsDone) }()

	outcomes := workload(ctx, cfg, run, c, d, files, mailbox, rng, logf, rep)
	// The short form has every kind of fault at least once.
	if cfg.Short {
		_ = waitFor(ctx, 2*time.Minute, "every kind of fault injected", func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			return len(f.counts) == len(FaultKinds) || len(f.counts)+missingKinds(d) >= len(FaultKinds)
		})
	}
	stopFaults()
	<-faultsDone
	rep.Faults, rep.FaultErr = f.counts, f.errs
	rep.Retries, rep.Replays = c.retries.Load(), c.replays.Load()
	logf("faults over (%v); healing and waiting for quiescence", f.counts)
	if err := d.heal(ctx); err != nil {
		return rep, fmt.Errorf("restore the deployment after the faults: %w", err)
	}

	db, err := postgres.Open(ctx, d.DBURL, 4)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	var state string
	werr := waitFor(ctx, cfg.Quiesce, "quiescence", func() bool {
		var ok bool
		ok, state = quiescent(ctx, db)
		return ok && mailDone(ctx, db, outcomes)
	})
	if werr != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("not quiescent after %v: %s", cfg.Quiesce, state))
	}
	logf("quiescent (%s); checking the invariants", state)
	// Deliveries of the last events may still be in flight to the receiver.
	_ = waitFor(ctx, 30*time.Second, "webhook deliveries settled", func() bool {
		var n int
		_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM event_deliveries WHERE status NOT IN ('delivered', 'failed')`).Scan(&n)
		return n == 0
	})
	ch := &checker{d: d, db: db, hc: c.http, out: outcomes, got: hooks.all(), hookSub: hookSub}
	rep.Checks = ch.run(ctx)
	rep.Took = time.Since(start)
	return rep, nil
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// missingKinds counts the fault kinds the deployment cannot have (no
// private ClickHouse).
func missingKinds(d *Deployment) int {
	if d.CH == nil {
		return 1
	}
	return 0
}

// mailDone reports whether every mail attachment has become a document.
func mailDone(ctx context.Context, db *postgres.DB, out []outcome) bool {
	want := 0
	for _, o := range out {
		if o.Channel == "email" {
			want++
		}
	}
	var n int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE source = 'email'`).Scan(&n)
	return n >= want
}

// configure creates, through the API, the webhook (every document
// event), the LOCAL destination and the IMAP source. It returns the
// webhook's subscriber name and the mailbox address ("" without Dovecot).
func configure(ctx context.Context, c *client, d *Deployment, hookURL string) (string, string, error) {
	var hook struct {
		ID int64 `json:"id"`
	}
	if err := c.call(ctx, "POST", "/api/webhooks/", map[string]any{"url": hookURL + "/hook", "description": "chaos",
		"events": []string{"document.uploaded", "document.processed", "document.failed"}}, &hook); err != nil {
		return "", "", fmt.Errorf("create the webhook: %w", err)
	}
	if err := c.call(ctx, "POST", "/api/integrations/", map[string]any{"direction": "DESTINATION", "integration_type": "LOCAL",
		"name": "chaos archive", "config": map[string]any{"path": "archive", "filename_template": "{id}_{original_filename}"}}, nil); err != nil {
		return "", "", fmt.Errorf("create the LOCAL destination: %w", err)
	}
	mailbox := ""
	if d.Dovecot != nil {
		host, port := hostPort(d.Dovecot.Addr)
		if err := c.call(ctx, "POST", "/api/integrations/", map[string]any{"integration_type": "IMAP", "name": "chaos inbox",
			"config":      map[string]any{"host": host, "port": port, "security": "none", "folder": "INBOX", "poll_interval": 10},
			"credentials": map[string]any{"username": "chaos", "password": "secret"}}, nil); err != nil {
			return "", "", fmt.Errorf("create the IMAP source: %w", err)
		}
		mailbox = d.Dovecot.Addr
	}
	return fmt.Sprintf("webhook:%d", hook.ID), mailbox, nil
}

// workload puts cfg.Docs documents in over cfg.Duration, a few clients at
// once: 70 % uploads, 15 % process-url, 15 % mail attachments (when
// Dovecot runs); one document in twenty is processed again.
func workload(ctx context.Context, cfg Config, run string, c *client, d *Deployment, files, mailbox string,
	rng *rand.Rand, logf func(string, ...any), rep *Report) []outcome {
	type job struct {
		kind string
		n    int
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var out []outcome
	var ids []int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var got []outcome
				switch j.kind {
				case "upload":
					got = append(got, c.upload(ctx, run, fmt.Sprintf("%s-u%06d.pdf", run, j.n)))
				case "url":
					got = append(got, c.fetchURL(ctx, run, fmt.Sprintf("%s-w%06d.pdf", run, j.n), files))
				case "email":
					mail, names := mailDocs(run, j.n)
					var err error
					for range 10 {
						if err = imaptest.Append(ctx, mailbox, "chaos", "secret", "INBOX", mail); err == nil {
							break
						}
						time.Sleep(time.Second)
					}
					for _, n := range names {
						o := outcome{Name: n, Channel: "email"}
						if err != nil {
							o.GaveUp = "mail not delivered to Dovecot: " + err.Error()
						}
						got = append(got, o)
					}
				case "reprocess":
					mu.Lock()
					var id int64
					if len(ids) > 0 {
						id = ids[rng.IntN(len(ids))]
					}
					mu.Unlock()
					if id != 0 {
						if err := c.reprocess(ctx, id); err != nil {
							logf("reprocess %d: %v", id, err)
						} else {
							mu.Lock()
							rep.Reproc++
							mu.Unlock()
						}
					}
				}
				mu.Lock()
				for _, o := range got {
					out = append(out, o)
					if o.FileID != 0 {
						ids = append(ids, o.FileID)
					}
				}
				mu.Unlock()
			}
		}()
	}
	pace := cfg.Duration / time.Duration(cfg.Docs)
	next := time.Now()
	made, n := 0, 0
	for made < cfg.Docs && ctx.Err() == nil {
		n++
		kind := "upload"
		switch r := rng.IntN(100); {
		case r < 15 && mailbox != "":
			kind = "email"
			made += 1 + n%3
		case r < 30:
			kind = "url"
			made++
		default:
			made++
		}
		jobs <- job{kind: kind, n: n}
		if rng.IntN(20) == 0 {
			jobs <- job{kind: "reprocess"}
		}
		if n%50 == 0 {
			logf("%d of %d documents put in", made, cfg.Docs)
		}
		next = next.Add(pace)
		time.Sleep(time.Until(next))
	}
	close(jobs)
	wg.Wait()
	for _, o := range out {
		rep.Docs[o.Channel]++
	}
	return out
}
