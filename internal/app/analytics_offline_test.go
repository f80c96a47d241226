package app_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/analytics/analyticstest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// TestStartsWhileClickHouseIsDown: a process whose CLICKHOUSE_URL does not
// answer starts, serves and is ready (metrics are not the system of
// record), warns, and once ClickHouse answers makes its tables and writes
// the metrics it held.
func TestStartsWhileClickHouseIsDown(t *testing.T) {
	t.Parallel()
	addr := clickhouseAddr(t)
	proxy := analyticstest.NewProxy(t, addr)
	proxy.Break()
	db := fmt.Sprintf("docflow_test_offline_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		if conn, err := ch.Open(&ch.Options{Addr: []string{addr}}); err == nil {
			conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) //nolint:errcheck
			conn.Close()
		}
	})
	logs := &testsupport.LogBuffer{}
	log := zerolog.New(logs).Level(zerolog.WarnLevel)
	a := apptest.New(t, apptest.Options{Log: &log, Env: map[string]string{
		"CLICKHOUSE_URL": "clickhouse://" + proxy.Addr() + "/" + db,
	}})
	if !strings.Contains(logs.String(), "ClickHouse does not answer") {
		t.Fatalf("no warning logged: %s", logs.String())
	}
	if status, body := get(t, a.URL+"/api/diagnostic/healthz/ready"); status != 200 {
		t.Fatalf("ready: %d %s", status, body)
	}
	if status, body := get(t, a.URL+"/api/diagnostic/healthz/live"); status != 200 {
		t.Fatalf("live: %d %s", status, body)
	}
	for i := range 10 {
		a.Recorder.Record(docflow.Metric{Kind: docflow.MetricRequest, Route: "/offline", Method: "GET", HTTPStatus: 200, FileID: int64(i)})
	}
	if st := a.RecorderStats(); st.Written != 0 {
		t.Fatalf("written while ClickHouse is down: %+v", st)
	}

	proxy.Restore()
	testsupport.WaitFor(t, 3*time.Minute, "the held metrics written", func() bool {
		return a.RecorderStats().Written >= 10
	})
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	if err := conn.QueryRow(context.Background(), "SELECT count() FROM "+db+".events WHERE route = '/offline'").Scan(&n); err != nil || n != 10 {
		t.Fatalf("events in ClickHouse: %d %v", n, err)
	}
}
