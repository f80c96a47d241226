// Command testsummary reads `go test -json` output on stdin, prints each
// package's time as it finishes, the output of failed tests, skip reasons
// and the wall time of the whole run, and closes with one line:
// "N passed, N failed, N skipped". Before the skip reasons it lists the
// slowest tests, so the next engineer sees where the suite's time goes.
// It exits 1 when anything failed.
//
// When the test binaries ran under internal/testexec (`make test
// TEST_CPU=1`), each package's line gives its CPU time too, and the
// summary lists the packages that used the most.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	start := time.Now()
	since := flag.Int64("since", 0, "Unix time the whole run started (make test passes its own start, installs included)")
	flag.Parse()
	wall := func() string {
		d := time.Since(start).Round(time.Second)
		if *since <= 0 {
			return d.String()
		}
		return fmt.Sprintf("%s (go test %s)", time.Since(time.Unix(*since, 0)).Round(time.Second), d)
	}
	os.Exit(summarize(os.Stdin, os.Stdout, wall))
}

// summarize reads the events from in and writes the summary to w; wall
// says the wall time so far. It returns the exit code.
func summarize(in io.Reader, w io.Writer, wall func() string) int {
	out := map[string]*strings.Builder{}
	var passed, failed, skipped int
	var failures, skips []string
	pkgFailed := map[string]bool{}
	var slow []timed
	cpu := map[string]float64{} // by package, from testexec's line
	var cpuOrder []timed
	cpuCol := func(pkg string) string {
		if c, ok := cpu[pkg]; ok {
			return fmt.Sprintf("  cpu %6.1fs", c)
		}
		return ""
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			fmt.Fprintln(w, string(line)) // build errors come as plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" && strings.HasPrefix(e.Output, testexecPrefix) {
				if c, ok := parseCPU(e.Output); ok {
					cpu[e.Package] = c
					cpuOrder = append(cpuOrder, timed{e.Package, c})
				}
				continue
			}
			b := out[key]
			if b == nil {
				b = &strings.Builder{}
				out[key] = b
			}
			if b.Len() < 64<<10 {
				b.WriteString(e.Output)
			}
		case "pass":
			if e.Test != "" && !strings.Contains(e.Test, "/") {
				slow = append(slow, timed{e.Package + " " + e.Test, e.Elapsed})
			}
			if e.Test != "" {
				passed++
			} else {
				fmt.Fprintf(w, "ok   %-50s %6.1fs%s\n", e.Package, e.Elapsed, cpuCol(e.Package))
			}
			delete(out, key)
		case "fail":
			if e.Test != "" {
				failed++
				failures = append(failures, key)
			} else {
				pkgFailed[e.Package] = true
				fmt.Fprintf(w, "FAIL %-50s %6.1fs%s\n", e.Package, e.Elapsed, cpuCol(e.Package))
			}
		case "skip":
			if e.Test != "" {
				skipped++
				reason := ""
				if b := out[key]; b != nil {
					reason = lastMeaningful(b.String())
				}
				skips = append(skips, key+": "+reason)
			}
			delete(out, key)
		}
	}
	for _, f := range failures {
		fmt.Fprintf(w, "\n--- FAIL %s\n%s", f, out[f])
	}
	for p := range pkgFailed {
		if b := out[p+" "]; b != nil && !strings.Contains(b.String(), "--- FAIL") {
			fmt.Fprintf(w, "\n--- FAIL package %s\n%s", p, b.String())
		}
		failed += boolInt(len(failures) == 0)
	}
	if len(slow) > 0 {
		sort.Slice(slow, func(i, j int) bool { return slow[i].secs > slow[j].secs })
		fmt.Fprintln(w, "\nSlowest tests:")
		for _, s := range slow[:min(len(slow), slowest)] {
			fmt.Fprintf(w, "  %6.1fs %s\n", s.secs, s.name)
		}
	}
	if len(cpuOrder) > 0 {
		var total float64
		for _, c := range cpuOrder {
			total += c.secs
		}
		sort.Slice(cpuOrder, func(i, j int) bool { return cpuOrder[i].secs > cpuOrder[j].secs })
		fmt.Fprintf(w, "\nCPU of the test processes and their tools: %.0fs in all; the most:\n", total)
		for _, c := range cpuOrder[:min(len(cpuOrder), slowest)] {
			fmt.Fprintf(w, "  %6.1fs %s\n", c.secs, c.name)
		}
	}
	if len(skips) > 0 {
		sort.Strings(skips)
		fmt.Fprintln(w, "\nSkipped tests:")
		for _, s := range skips {
			fmt.Fprintln(w, "  "+s)
		}
	}
	fmt.Fprintf(w, "\ntotal wall time %s\n", wall())
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || len(pkgFailed) > 0 {
		return 1
	}
	return 0
}

// testexecPrefix begins the line internal/testexec prints when a test
// binary ends: "testexec: cpu 12.34s (user 10.01s, sys 2.33s)".
const testexecPrefix = "testexec: cpu "

// parseCPU reads the seconds of a testexec line.
func parseCPU(line string) (float64, bool) {
	f, _, _ := strings.Cut(strings.TrimPrefix(line, testexecPrefix), "s")
	c, err := strconv.ParseFloat(f, 64)
	return c, err == nil
}

// slowest is how many of the slowest passed tests the summary lists.
const slowest = 15

type timed struct {
	name string
	secs float64
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func lastMeaningful(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "--- SKIP") && !strings.HasPrefix(l, "=== ") {
			return l
		}
	}
	return ""
}
