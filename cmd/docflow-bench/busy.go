package main

import (
	"context"
	"fmt"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// busyBenchConfig sizes the busy section.
type busyBenchConfig struct {
	Backlog int // documents queued for the standard pipeline before the measured uploads
	Uploads int // measured uploads of each phase
	Clients int
	Size    int // bytes per document
}

func defaultBusyBenchConfig(quick bool) busyBenchConfig {
	if quick {
		return busyBenchConfig{Backlog: 600, Uploads: 600, Clients: 32, Size: 100 << 10}
	}
	return busyBenchConfig{Backlog: 2700, Uploads: 2700, Clients: 32, Size: 100 << 10}
}

// shutdownBound is the most a serve process may take from SIGTERM to its
// exit with a backlog queued.
const shutdownBound = 15 * time.Second

// benchBusy measures, on one `docflow serve` process (single-user mode,
// as a new user runs it): uploads from 32 clients while the standard
// pipeline works through a backlog, beside the same uploads into the same
// process with no step to run (the intake-only figure); then SIGTERM with
// that backlog, the seconds until the process exits, the steps it left
// claimed, and after a restart every document of the backlog reaching an
// end.
//
// The intake-only phase routes its uploads to an empty default pipeline
// (a run without steps ends when routed); those documents, reprocessed
// once the standard pipeline is the default again, are the backlog.
func benchBusy(ctx context.Context, r *Report, o *options) error {
	const section = "busy"
	cfg := defaultBusyBenchConfig(o.quick)
	dbURL, dropDB, err := benchDB(ctx, "busy")
	if err != nil {
		return err
	}
	defer dropDB()
	s, err := newServed(o.bin, dbURL, o.workdir+"/busy", "AUTH_ENABLED=false")
	if err != nil {
		return err
	}
	if err := s.start(ctx); err != nil {
		return err
	}
	defer s.stop()
	db, err := postgres.Open(ctx, dbURL, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	files := postgres.NewFileStore(db)

	var standard int64
	var pipelines []docflow.Pipeline
	if err := apiJSON(ctx, "GET", s.url+"/api/pipelines", "", nil, &pipelines); err != nil {
		return err
	}
	for _, p := range pipelines {
		if p.Name == docflow.StandardPipelineName {
			standard = p.ID
		}
	}
	if standard == 0 {
		return fmt.Errorf("no %q among the pipelines", docflow.StandardPipelineName)
	}
	if err := apiJSON(ctx, "POST", s.url+"/api/pipelines", "", map[string]any{"name": "intake only", "is_default": true, "is_active": true}, nil); err != nil {
		return err
	}

	// 1. Intake only: the router ends each run at once.
	intakeTpl, err := uploadTemplates("intake", cfg.Clients, cfg.Size)
	if err != nil {
		return err
	}
	base, err := uploadRun(ctx, s.url+"/api/upload", "", intakeTpl, cfg.Backlog)
	if err != nil {
		return fmt.Errorf("intake-only uploads: %w", err)
	}
	if err := waitUnfinished(ctx, files, 0, 2*time.Minute); err != nil {
		return fmt.Errorf("intake-only runs: %w", err)
	}

	// 2. The backlog: the standard pipeline is the default again (the
	// router keeps its default for RouteCacheTTL, a second), and the
	// intake-only documents are reprocessed.
	if err := apiJSON(ctx, "PUT", fmt.Sprintf("%s/api/pipelines/%d", s.url, standard), "", map[string]any{"is_default": true}, nil); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	if err := apiJSON(ctx, "POST", s.url+"/api/files/bulk-reprocess", "", base.FileIDs, nil); err != nil {
		return err
	}
	// The steps are at work once the first documents are through.
	t0 := time.Now()
	for {
		n, err := files.CountUnfinishedRuns(ctx)
		if err != nil {
			return err
		}
		if n > 0 && n < len(base.FileIDs)-10 {
			break
		}
		if time.Since(t0) > 2*time.Minute {
			return fmt.Errorf("the backlog's steps did not start within 2 minutes (%d runs unfinished)", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	before, _ := files.CountUnfinishedRuns(ctx)

	// 3. The same uploads while the steps work.
	busyTpl, err := uploadTemplates("busy", cfg.Clients, cfg.Size)
	if err != nil {
		return err
	}
	load0 := loadAvg1()
	busy, err := uploadRun(ctx, s.url+"/api/upload", "", busyTpl, cfg.Uploads)
	if err != nil {
		return fmt.Errorf("uploads while the pipeline works: %w", err)
	}
	after, err := files.CountUnfinishedRuns(ctx)
	if err != nil {
		return err
	}
	infoLine(r, section, fmt.Sprintf("intake only: %d uploads, %d clients", cfg.Backlog, cfg.Clients),
		fmt.Sprintf("%12.0f /s, p50 %.1f ms, p99 %.1f ms", base.Rate, millis(base.P50), millis(base.P99)))
	infoLine(r, section, "pipeline working: runs unfinished before, after",
		fmt.Sprintf("%12d, %d (load average %.1f, then %.1f)", before, after, load0, loadAvg1()))
	r.Add(Row{Section: section, Name: fmt.Sprintf("POST /api/upload while the steps work, %d clients", cfg.Clients), Value: busy.Rate, Unit: "/s",
		Baseline: base.Rate, Target: "info", Pass: true})
	r.RatioAtMost(section, "POST /api/upload p99 while the steps work", millis(busy.P99), millis(base.P99), "ms", 3)

	// 4. SIGTERM with the backlog.
	exit, clean := s.terminate(2 * time.Minute)
	how := s.exitedWith()
	if !clean {
		how = "killed after 2 minutes"
	}
	r.AtMost(section, fmt.Sprintf("SIGTERM to exit, %d runs unfinished", after), exit.Seconds(), "s", shutdownBound.Seconds())
	infoLine(r, section, "  the process ended", how)
	running, held, err := db.StepsLeftRunning(ctx)
	if err != nil {
		return err
	}
	r.Add(Row{Section: section, Name: fmt.Sprintf("steps left claimed by the stopped process (of %d left running)", running),
		Value: float64(held), Unit: "steps", Target: "0", Pass: held == 0})

	// 5. A restart finishes every document.
	left, err := files.CountUnfinishedRuns(ctx)
	if err != nil {
		return err
	}
	if err := s.start(ctx); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	t1 := time.Now()
	if err := waitUnfinished(ctx, files, 0, 30*time.Minute); err != nil {
		return fmt.Errorf("after the restart: %w", err)
	}
	done, failed, err := db.RunCounts(ctx)
	if err != nil {
		return err
	}
	r.Add(Row{Section: section, Name: fmt.Sprintf("runs ended after a restart (%d left at exit, in %.0f s)", left, time.Since(t1).Seconds()),
		Value: float64(done + failed), Unit: "runs", Target: fmt.Sprintf("all %d, none failed", done+failed), Pass: failed == 0})
	return nil
}

// waitUnfinished waits until at most n runs are unfinished.
func waitUnfinished(ctx context.Context, files *postgres.FileStore, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		open, err := files.CountUnfinishedRuns(ctx)
		if err != nil {
			return err
		}
		if open <= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d runs unfinished after %s", open, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
