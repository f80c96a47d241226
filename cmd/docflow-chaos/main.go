// Command docflow-chaos is `make chaos`: it runs docflow as deployed on
// one machine (broker, two api processes, three workers, PostgreSQL,
// ClickHouse, Dovecot), puts documents in under random faults and checks
// the invariants once the deployment is quiet (package e2e/chaos). It
// prints a table of the faults injected and one of the invariants
// checked, and exits 1 when an invariant failed, 2 when the run could not
// be carried out. docs/chaos.md says how to read it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"docflow/e2e/chaos"
)

func main() {
	docs := flag.Int("docs", 10000, "documents to put in")
	bin := flag.String("bin", "bin/docflow", "the docflow binary to run")
	dir := flag.String("dir", "", "the run's folder (default: a new temporary one)")
	keep := flag.Bool("keep", false, "keep the run's folder (logs, data) even when every invariant held")
	seed := flag.Uint64("seed", 0, "seed of the faults' choices (0: random)")
	short := flag.Bool("short", false, "short faults (ClickHouse down 10 s) and a 45 s workload, as in make test")
	duration := flag.Duration("duration", 0, "spread the workload over this long (default: docs/20 seconds)")
	quiet := flag.Bool("quiet", false, "no progress lines")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := chaos.Config{Docs: *docs, Bin: *bin, Dir: *dir, Keep: *keep, Seed: *seed, Short: *short, Duration: *duration, Log: os.Stderr}
	if *quiet {
		cfg.Log = nil
	}
	start := time.Now()
	rep, err := chaos.Run(ctx, cfg)
	rep.Print(os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "docflow-chaos: the run could not be carried out after %v: %v\n(logs in %s/logs)\n", time.Since(start).Round(time.Second), err, rep.Dir)
		os.Exit(2)
	}
	if !rep.OK() {
		fmt.Fprintf(os.Stderr, "docflow-chaos: invariants failed; every process's log is in %s/logs\n", rep.Dir)
		os.Exit(1)
	}
}
