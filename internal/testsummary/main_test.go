package main

import (
	"strings"
	"testing"
)

// The summary prints each package's time, then the total wall time, and
// closes with the counts line; a failure makes the exit code 1.
func TestSummaryEndsWithWallTimeAndCounts(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"docflow/a","Test":"TestOK"}`,
		`{"Action":"pass","Package":"docflow/a","Test":"TestOK","Elapsed":0.5}`,
		`{"Action":"output","Package":"docflow/a","Test":"TestSkip","Output":"    x_test.go:9: no ClickHouse\n"}`,
		`{"Action":"skip","Package":"docflow/a","Test":"TestSkip"}`,
		`{"Action":"pass","Package":"docflow/a","Elapsed":1.5}`,
		`{"Action":"output","Package":"docflow/b","Test":"TestBad","Output":"    y_test.go:3: boom\n"}`,
		`{"Action":"fail","Package":"docflow/b","Test":"TestBad","Elapsed":0.1}`,
		`{"Action":"fail","Package":"docflow/b","Elapsed":2.25}`,
	}, "\n")
	var out strings.Builder
	code := summarize(strings.NewReader(in), &out, func() string { return "31m5s (go test 17m32s)" })
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if code != 1 {
		t.Fatalf("exit code %d, want 1", code)
	}
	if !strings.Contains(out.String(), "ok   docflow/a") || !strings.Contains(out.String(), "1.5s") ||
		!strings.Contains(out.String(), "FAIL docflow/b") || !strings.Contains(out.String(), "boom") ||
		!strings.Contains(out.String(), "no ClickHouse") || !strings.Contains(out.String(), "Slowest tests:\n     0.5s docflow/a TestOK") {
		t.Fatalf("summary:\n%s", out.String())
	}
	if n := len(lines); n < 2 || lines[n-2] != "total wall time 31m5s (go test 17m32s)" || lines[n-1] != "1 passed, 1 failed, 1 skipped" {
		t.Fatalf("summary does not end with the wall time and the counts:\n%s", out.String())
	}
}

// With the binaries run under internal/testexec, a package's line gives
// its CPU and the summary lists the packages by CPU; the testexec line is
// not a test's output.
func TestSummaryGivesEachPackagesCPU(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"pass","Package":"docflow/a","Test":"TestOK","Elapsed":0.5}`,
		`{"Action":"output","Package":"docflow/a","Output":"PASS\n"}`,
		`{"Action":"output","Package":"docflow/a","Output":"testexec: cpu 12.34s (user 10.01s, sys 2.33s)\n"}`,
		`{"Action":"pass","Package":"docflow/a","Elapsed":1.5}`,
		`{"Action":"output","Package":"docflow/b","Output":"testexec: cpu 3.50s (user 3.00s, sys 0.50s)\n"}`,
		`{"Action":"pass","Package":"docflow/b","Elapsed":2}`,
	}, "\n")
	var out strings.Builder
	if code := summarize(strings.NewReader(in), &out, func() string { return "1m" }); code != 0 {
		t.Fatalf("exit code %d:\n%s", code, out.String())
	}
	for _, want := range []string{"1.5s  cpu   12.3s", "2.0s  cpu    3.5s", "16s in all", "    12.3s docflow/a\n     3.5s docflow/b"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Count(out.String(), "testexec:") != 0 {
		t.Errorf("the testexec line is shown as output:\n%s", out.String())
	}
}
