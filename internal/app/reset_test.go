package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

func bearerGet(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestResetReachesASecondProcess: two api processes share the database
// and the broker. The second one has taken an API token in its cache (its
// clock stands still, so the cache never expires by itself); a full reset
// made through the first is announced, the second hears it, drops its
// caches and refuses the wiped token at once.
func TestResetReachesASecondProcess(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AUTH_ENABLED": "true", "ENABLE_FACTORY_RESET": "true"}
	a := apptest.New(t, apptest.Options{Role: "api", Env: env})
	frozen := time.Now()
	b := apptest.New(t, apptest.Options{Role: "api", DB: a.DB, Now: func() time.Time { return frozen },
		Env: map[string]string{"AUTH_ENABLED": "true", "ENABLE_FACTORY_RESET": "true", "KAFKA_BROKERS": strings.Join(a.Brokers, ",")}})
	token := a.Token(t, "admin")
	if s := bearerGet(t, b.URL+"/api/files", token); s != 200 {
		t.Fatalf("second process before the reset: %d", s)
	}

	req, _ := http.NewRequest("POST", a.URL+"/api/admin/system-reset/full", strings.NewReader(`{"confirmation":"DELETE"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			ID string `json:"reset_id"`
		} `json:"result"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || out.Result.ID == "" {
		t.Fatalf("reset: %d %v", resp.StatusCode, err)
	}
	if a.LastReset() != out.Result.ID {
		t.Fatalf("the resetting process did not drop its caches: %q", a.LastReset())
	}
	testsupport.WaitFor(t, 3*time.Minute, "the second process hears the reset", func() bool { return b.LastReset() == out.Result.ID })
	if s := bearerGet(t, b.URL+"/api/files", token); s != 401 {
		t.Fatalf("the second process still takes the wiped token: %d", s)
	}
}

// TestFactoryResetOnStartupRunsOnce: FACTORY_RESET_ON_STARTUP alone wipes
// nothing; with ENABLE_FACTORY_RESET an api process wipes at start, audits
// it and stores the setting false, so the next start with the same
// environment keeps what was made since.
func TestFactoryResetOnStartupRunsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "startreset")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	tokens := func() int {
		t.Helper()
		var n int
		if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM api_tokens`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	start := func(env map[string]string) *apptest.App {
		t.Helper()
		a, err := apptest.Start(ctx, apptest.Options{Role: "api", DB: db, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	a := start(map[string]string{"FACTORY_RESET_ON_STARTUP": "true"})
	a.Token(t, "admin")
	a.Close()
	a = start(map[string]string{"FACTORY_RESET_ON_STARTUP": "true"})
	a.Close()
	if tokens() != 1 {
		t.Fatal("FACTORY_RESET_ON_STARTUP without ENABLE_FACTORY_RESET wiped")
	}

	both := map[string]string{"FACTORY_RESET_ON_STARTUP": "true", "ENABLE_FACTORY_RESET": "true"}
	a = start(both)
	if n := tokens(); n != 0 {
		t.Fatalf("%d tokens after the reset at start", n)
	}
	var stored, detail string
	if err := db.Pool.QueryRow(ctx, `SELECT value FROM settings WHERE key = 'FACTORY_RESET_ON_STARTUP'`).Scan(&stored); err != nil || stored != "false" {
		t.Fatalf("FACTORY_RESET_ON_STARTUP stored as %q (%v)", stored, err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT detail FROM audit_log WHERE action = 'system.reset' AND actor = 'system'`).Scan(&detail); err != nil ||
		!strings.Contains(detail, "FACTORY_RESET_ON_STARTUP") {
		t.Fatalf("the reset at start is not audited: %q %v", detail, err)
	}
	a.Token(t, "admin")
	a.Close()

	a = start(both)
	a.Close()
	if tokens() != 1 {
		t.Fatal("a second start wiped again")
	}
}

// TestResetWithStepsInFlight: documents are inside a step that runs for
// seconds when the reset wipes their rows. The steps end afterwards and
// write nothing back (no file, run, log or name row comes back), nothing
// crashes, and the process stays ready.
func TestResetWithStepsInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"ENABLE_TEST_STEP": "true", "ENABLE_FACTORY_RESET": "true"}})
	p := &docflow.Pipeline{Name: "slow", IsDefault: true, IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "slow", Enabled: true,
			Config: map[string]any{"sleep_ms": 3000, "title": "written back?"}}}}
	if err := postgres.NewPipelineStore(a.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		upload(t, a.URL, fmt.Sprintf("inflight-%d.txt", i), fmt.Sprintf("document %d\n", i))
	}
	count := func(sql string) int {
		t.Helper()
		var n int
		if err := a.DB.Pool.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testsupport.WaitFor(t, 3*time.Minute, "the steps running", func() bool {
		return count(`SELECT count(*) FROM run_steps WHERE status = 'running'`) > 0
	})

	resp, err := http.Post(a.URL+"/api/admin/system-reset/full", "application/json", strings.NewReader(`{"confirmation":"DELETE"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the steps in flight ended", func() bool { return a.Engine.InFlight() == 0 })
	for _, table := range []string{"files", "runs", "run_steps", "processing_logs", "file_names"} {
		if n := count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Errorf("%d rows written back to %s after the reset", n, table)
		}
	}
	if status, body := get(t, a.URL+"/api/diagnostic/healthz/ready"); status != 200 {
		t.Fatalf("not ready after the reset: %d %s", status, body)
	}
}
