package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Report collects benchmark figures. Each figure is printed beside its target
// and, where there is one, the baseline measured in the same run.
type Report struct {
	mu   sync.Mutex
	out  io.Writer
	rows []Row
}

// Row is one printed figure.
type Row struct {
	Section  string
	Name     string
	Value    float64
	Unit     string
	Baseline float64 // 0 = none
	Target   string  // human-readable target, e.g. ">= 1000 /s" or ">= 0.6x baseline"
	Pass     bool
}

// NewReport writes rows to out as they are added.
func NewReport(out io.Writer) *Report { return &Report{out: out} }

// Add records and prints one figure.
func (r *Report) Add(row Row) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, row)
	status := "PASS"
	if !row.Pass {
		status = "MISS"
	}
	line := fmt.Sprintf("%-10s %-58s %12.2f %-8s", row.Section, row.Name, row.Value, row.Unit)
	if row.Baseline > 0 {
		line += fmt.Sprintf(" baseline %10.2f ratio %5.2fx", row.Baseline, row.Value/row.Baseline)
	}
	line += fmt.Sprintf("  target %s  %s", row.Target, status)
	fmt.Fprintln(r.out, strings.TrimRight(line, " "))
}

// AtLeast adds a figure whose target is value >= min.
func (r *Report) AtLeast(section, name string, value float64, unit string, min float64) {
	r.Add(Row{Section: section, Name: name, Value: value, Unit: unit, Target: fmt.Sprintf(">= %g %s", min, unit), Pass: value >= min})
}

// AtMost adds a figure whose target is value <= max.
func (r *Report) AtMost(section, name string, value float64, unit string, max float64) {
	r.Add(Row{Section: section, Name: name, Value: value, Unit: unit, Target: fmt.Sprintf("<= %g %s", max, unit), Pass: value <= max})
}

// Ratio adds a figure compared with a baseline from the same run; the
// target is value/baseline >= minRatio.
func (r *Report) Ratio(section, name string, value, baseline float64, unit string, minRatio float64) {
	pass := baseline > 0 && value/baseline >= minRatio
	r.Add(Row{Section: section, Name: name, Value: value, Unit: unit, Baseline: baseline, Target: fmt.Sprintf(">= %gx baseline", minRatio), Pass: pass})
}

// Rows returns a copy of the recorded rows.
func (r *Report) Rows() []Row {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Row(nil), r.rows...)
}

// RatioAtMost adds a figure compared with a baseline from the same run;
// the target is value/baseline <= maxRatio.
func (r *Report) RatioAtMost(section, name string, value, baseline float64, unit string, maxRatio float64) {
	pass := baseline > 0 && value/baseline <= maxRatio
	r.Add(Row{Section: section, Name: name, Value: value, Unit: unit, Baseline: baseline, Target: fmt.Sprintf("<= %gx baseline", maxRatio), Pass: pass})
}
