package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

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
	testsupport.WaitFor(t, 30*time.Second, "the second process hears the reset", func() bool { return b.LastReset() == out.Result.ID })
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
