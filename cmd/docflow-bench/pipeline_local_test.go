package main

import (
	"context"
	"os"
	"testing"
)

// TestBenchPipeline runs the pipeline section when DOCFLOW_BENCH_PIPELINE is
// set (it takes about a minute): go test ./cmd/docflow-bench -run BenchPipeline -v
func TestBenchPipeline(t *testing.T) {
	if os.Getenv("DOCFLOW_BENCH_PIPELINE") == "" {
		t.Skip("set DOCFLOW_BENCH_PIPELINE=1 to run the pipeline benchmark")
	}
	r := NewReport(os.Stdout)
	if err := benchPipeline(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}
