package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/analytics/analyticstest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// clickhouseAddr returns the test ClickHouse (CLICKHOUSE_TEST_ADDR, default
// 127.0.0.1:19000), starting the private server once when nothing answers;
// the test skips when none can run.
func clickhouseAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("CLICKHOUSE_TEST_ADDR")
	if addr == "" {
		addr = "127.0.0.1:19000"
	}
	ping := func() error {
		conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 10 * time.Second})
		if err != nil {
			return err
		}
		defer conn.Close()
		// Generous: a loaded machine must not pass for a missing server.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return conn.Ping(ctx)
	}
	if err := ping(); err != nil {
		script, _ := filepath.Abs("../../scripts/clickhouse.sh")
		if out, serr := exec.Command(script).CombinedOutput(); serr != nil {
			t.Skipf("no ClickHouse at %s (%v) and %s failed: %v %s", addr, err, script, serr, out)
		}
		if err := ping(); err != nil {
			t.Skipf("no ClickHouse at %s: %v", addr, err)
		}
	}
	return addr
}

// outageWait bounds each wait of the outage tests: seconds on an idle
// machine, generous for a loaded one.
const outageWait = 3 * time.Minute

// TestClickHouseOutageDuringABurst: with ClickHouse hanging (it accepts
// connections and answers nothing), documents still flow through the
// pipeline, Record never blocks, the metrics held in memory stay within
// ANALYTICS_BUFFER_ROWS, and what could not be held is dropped, counted,
// logged and shown by the analytics API once ClickHouse is back, when
// recording resumes. (A ClickHouse that refuses connections is
// TestStartsWhileClickHouseIsDown's.)
//
// NOTE: hanging rather than refusing, so that a Record waiting on the
// store would never return: the burst then fails by its outer bound
// however slow the machine, where against a refusing store a blocking
// Record only shows as slow, which a busy machine is too.
func TestClickHouseOutageDuringABurst(t *testing.T) {
	t.Parallel()
	addr := clickhouseAddr(t)
	proxy := analyticstest.NewProxy(t, addr)
	db := fmt.Sprintf("docflow_test_outage_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		if conn, err := ch.Open(&ch.Options{Addr: []string{addr}}); err == nil {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) //nolint:errcheck
			conn.Close()
		}
	})
	const bound = 1000
	logs := &testsupport.LogBuffer{}
	log := zerolog.New(logs).Level(zerolog.WarnLevel)
	a := apptest.New(t, apptest.Options{Log: &log, Env: map[string]string{
		"ENABLE_TEST_STEP":         "true",
		"CLICKHOUSE_URL":           "clickhouse://" + proxy.Addr() + "/" + db + "",
		"ANALYTICS_BUFFER_ROWS":    fmt.Sprint(bound),
		"ANALYTICS_SAMPLE_SECONDS": "1",
	}})
	ctx := context.Background()
	p := &docflow.Pipeline{Name: "one test step", IsDefault: true, IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "drill", Enabled: true}}}
	if err := postgres.NewPipelineStore(a.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	stats := a.RecorderStats

	proxy.Stall()
	// The burst: documents through the API and the pipeline, and a flood of
	// metrics far past the bound from many goroutines.
	var ids []int64
	for i := range 20 {
		ids = append(ids, upload(t, a.URL, fmt.Sprintf("burst%d.txt", i), fmt.Sprintf("document %d\n", i)))
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				a.Recorder.Record(docflow.Metric{Kind: docflow.MetricRequest, Route: "/burst", Method: "GET", HTTPStatus: 200, FileID: int64(g*5000 + i)})
			}
		}()
	}
	flooded := make(chan struct{})
	go func() { wg.Wait(); close(flooded) }()
	select {
	case <-flooded:
	case <-time.After(outageWait):
		t.Fatalf("40,000 Record calls not done after %v with ClickHouse hanging: Record blocks", outageWait)
	}
	testsupport.WaitFor(t, outageWait, "every document completed with ClickHouse hanging", func() bool {
		for _, id := range ids {
			f, err := a.Files.FindFileByID(ctx, id)
			if err != nil || f.Status != docflow.StatusCompleted {
				return false
			}
		}
		return true
	})
	st := stats()
	if st.Buffered > bound {
		t.Fatalf("%d metrics held in memory, bound %d", st.Buffered, bound)
	}
	if st.Dropped < 40_000-bound || st.Written != 0 && st.Written > int64(bound) {
		t.Fatalf("stats %+v: want at least %d dropped", st, 40_000-bound)
	}
	testsupport.WaitFor(t, outageWait, "the drop logged", func() bool {
		return strings.Contains(logs.String(), "analytics metrics dropped")
	})

	proxy.Restore()
	testsupport.WaitFor(t, outageWait, "the buffered metrics written", func() bool {
		s := stats()
		return s.Written > 0 && s.Buffered < 50
	})
	if err := a.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var ov docflow.OverviewReport
	testsupport.WaitFor(t, outageWait, "the drop count in the overview's process samples", func() bool {
		a.Recorder.Flush(ctx) //nolint:errcheck
		status, body := get(t, a.URL+"/api/analytics/overview")
		if status != 200 || json.Unmarshal([]byte(body), &ov) != nil || ov.Totals.Recorder == nil {
			return false
		}
		for _, p := range ov.Totals.Processes {
			if p.Dropped >= 40_000-bound {
				return true
			}
		}
		return false
	})
	if ov.Totals.Recorder.Dropped < 40_000-bound {
		t.Fatalf("overview recorder %+v", ov.Totals.Recorder)
	}
}
