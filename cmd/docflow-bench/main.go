// Command docflow-bench measures docflow's speed and memory targets. Every
// figure is printed beside its target, and, where the target is relative,
// beside a baseline measured in the same run on the same machine.
//
//	docflow-bench [-only api,pipeline,…] [-quick]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
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
}

func sections() []section {
	return []section{
		{"api", "HTTP foundation: healthz/live vs a bare fasthttp handler, authenticated token list, idle RSS", benchAPI},
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "bare-server" {
		bareServer(os.Args[2:])
		return
	}
	only := flag.String("only", "", "comma-separated sections to run (default all)")
	quick := flag.Bool("quick", false, "smaller data sets and shorter runs")
	bin := flag.String("docflow", "bin/docflow", "path of the docflow binary")
	list := flag.Bool("list", false, "list the sections and exit")
	flag.Parse()
	if *list {
		for _, s := range sections() {
			fmt.Printf("%-10s %s\n", s.name, s.desc)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "docflow-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	o := &options{quick: *quick, bin: *bin, workdir: dir}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	r := NewReport(os.Stdout)
	fmt.Printf("docflow-bench: %s, GOMAXPROCS cores as the machine has; figures are printed with their targets\n\n", time.Now().Format(time.RFC3339))
	failed := 0
	for _, s := range sections() {
		if len(want) > 0 && !want[s.name] {
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
