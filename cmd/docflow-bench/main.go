// Command docflow-bench measures docflow's speed and memory targets. Every
// figure is printed beside its target, and, where the target is relative,
// beside a baseline measured in the same run on the same machine.
//
//	docflow-bench [-only api,pipeline,…] [-quick]
//
// Each section is a file of its own (api.go, intake.go, pipeline.go,
// analytics.go, cost_ab.go, fanout.go…); docs/benchmarks.md says what each
// measures, how, and what it measured.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

type section struct {
	name string
	desc string
	run  func(ctx context.Context, r *Report, o *options) error
}

type options struct {
	quick   bool
	bin     string // path of the docflow binary
	workdir string
	load    loadOptions
}

// optIn are the sections that run only when -only names them.
var optIn = map[string]bool{"soak": true}

func sections() []section {
	return []section{
		{"api", "HTTP foundation: healthz/live vs a bare fasthttp handler, authenticated token list, idle RSS", benchAPI},
		{"intake", "uploads vs a bare streaming handler, 1 GiB upload memory, file listing at 100,000 records, bulk download", adapt(benchIntake)},
		{"sharing", "files listing of one user among 100 (1,000 own, 500 shared of 100,000 records) vs the single-user listing", adapt(benchSharing)},
		{"pipeline", "8 cheap steps through the engine vs raw kafka-go, one-document latency, 10,000 queued", adapt(benchPipeline)},
		{"ocr", "OCR accuracy on generated 300 dpi pages, parallel OCR vs sequential tesseract", adapt(benchOCR)},
		{"processing", "scanned and born-digital documents through the standard pipeline, 200-page scan memory", adapt(benchProcessingPipeline)},
		{"index", "Bleve index: bulk indexing, search and kNN at 100,000 documents", func(ctx context.Context, r *Report, o *options) error {
			return benchSearchIndex(ctx, r, o.workdir+"/index")
		}},
		{"search", "search API, similar documents and pairs at 100,000 documents", adapt(benchSearchAPI)},
		{"passwords", "argon2id hash and verification cost of one local sign-in", benchPasswords},
		{"analytics", "metrics into ClickHouse vs raw batched inserts, pipeline with recording on vs off", benchAnalytics},
		{"analytics-api", "each analytics endpoint's p99 over 30 days of 10 M events (BENCH_ANALYTICS_EVENTS, BENCH_ANALYTICS_DB)", benchAnalyticsAPI},
		{"fanout", "document events to 10 webhooks on a local receiver vs its raw request rate: burst, p99 at 2,000/s, one receiver dead", benchFanout},
		{"dest", "storage destinations: 1,000 documents of 100 KB to local WebDAV and S3 servers vs their client libraries, 1 GiB delivery memory", benchDestinations},
		{"graphql", "GraphQL documents(limit: 100) p99 beside the REST list of the same 100, at 100,000 documents", adapt(benchGraphQL)},
		{"web", "the documents page's first load in headless Chromium: bytes transferred and time until the list is shown", benchWeb},
		{"busy", "uploads from 32 clients while the steps work through a backlog vs intake only, then SIGTERM with the backlog: time to exit, steps released, every document ended after a restart", benchBusy},
		{"load", "the mixed workload (60 % lists and details, 20 % search, 15 % 100 KB uploads, 5 % writes) on a multi-user serve: the highest rate held, then that rate for -load-duration, p50/p99 per route", benchLoad},
		{"soak", "the mixed workload at -soak-rate for -soak-duration: the server's memory, goroutines, open files and database connections over time (only with -only soak)", benchSoak},
		{"imap", "IMAP sources from Dovecot: mails with a 100 KB PDF to pending vs the bare client, 100 idle sources' memory", benchIMAP},
	}
}

// adapt fits a section function that needs no options.
func adapt(f func(ctx context.Context, r *Report) error) func(context.Context, *Report, *options) error {
	return func(ctx context.Context, r *Report, _ *options) error { return f(ctx, r) }
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare-server" {
		bareServer(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "cost-child" {
		os.Exit(costChild(os.Args[2:]))
	}
	only := flag.String("only", "", "comma-separated sections to run (default all)")
	quick := flag.Bool("quick", false, "smaller data sets and shorter runs")
	bin := flag.String("docflow", "bin/docflow", "path of the docflow binary")
	list := flag.Bool("list", false, "list the sections and exit")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of this process (the in-process servers and clients) to `file`")
	root := flag.String("dir", "data/bench", "`directory` for the benchmarks' files (blob stores, corpora, indexes), emptied at the end")
	var lo loadOptions
	flag.DurationVar(&lo.duration, "load-duration", 10*time.Minute, "the load section's run at the highest rate held (-quick: 1m)")
	flag.DurationVar(&lo.step, "load-step", 30*time.Second, "each step of the load section's search for the highest rate (-quick: 10s)")
	flag.Float64Var(&lo.start, "load-start", 20, "the first step's rate, requests a second")
	flag.DurationVar(&lo.p99, "load-p99", 250*time.Millisecond, "the p99 over every route a step must keep to hold")
	flag.IntVar(&lo.docs, "load-docs", 5000, "documents seeded for the load and soak sections (-quick: 2000)")
	flag.DurationVar(&lo.soakDuration, "soak-duration", time.Hour, "the soak's duration")
	flag.DurationVar(&lo.soakEvery, "soak-every", 5*time.Minute, "a row of the soak's table every so often")
	flag.Float64Var(&lo.soakRate, "soak-rate", 20, "the soak's rate, requests a second")
	flag.DurationVar(&lo.soakKeep, "soak-keep", 5*time.Minute, "the soak deletes each document its uploads made this long after, so the corpus keeps its size (0 keeps them all)")
	flag.Parse()
	if *quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["load-duration"] {
			lo.duration = time.Minute
		}
		if !set["load-step"] {
			lo.step = 10 * time.Second
		}
		if !set["load-docs"] {
			lo.docs = 2000
		}
	}
	if *list {
		for _, s := range sections() {
			fmt.Printf("%-10s %s\n", s.name, s.desc)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// NOTE: the files live where a service keeps its WORKDIR (./data), not
	// in the system's /tmp: builds and test runs create and delete files
	// there all day, and ext4 then spends up to a millisecond of CPU on
	// every new file while it skips the recently freed inodes, for the
	// bare handler and docflow alike.
	if err := os.MkdirAll(*root, 0o750); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if abs, err := filepath.Abs(*root); err == nil {
		os.Setenv("TMPDIR", abs) //nolint:errcheck // every section's os.MkdirTemp("") and the tools' temp files
	}
	dir, err := os.MkdirTemp("", "docflow-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	o := &options{quick: *quick, bin: *bin, workdir: dir, load: lo}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	r := NewReport(os.Stdout)
	fmt.Printf("docflow-bench: %s, GOMAXPROCS cores as the machine has; figures are printed with their targets\n\n", time.Now().Format(time.RFC3339))
	failed := 0
	for _, s := range sections() {
		if len(want) > 0 && !want[s.name] || len(want) == 0 && optIn[s.name] {
			continue
		}
		fmt.Printf("== %s: %s\n", s.name, s.desc)
		start := time.Now()
		if err := s.run(ctx, r, o); err != nil {
			failed++
			fmt.Printf("   %s failed: %v\n", s.name, err)
		}
		fmt.Printf("   (%s took %s)\n\n", s.name, time.Since(start).Round(time.Millisecond))
	}
	rows := r.Rows()
	miss := 0
	for _, row := range rows {
		if !row.Pass {
			miss++
		}
	}
	fmt.Printf("%d figures, %d met their target, %d missed; %d sections failed to run\n", len(rows), len(rows)-miss, miss, failed)
}
