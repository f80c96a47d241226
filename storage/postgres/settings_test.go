package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/testsupport"
)

func openTest(t *testing.T) *DB {
	t.Helper()
	db, cleanup, err := OpenTestDB(context.Background(), "pg")
	if err != nil {
		t.Fatalf("open test db: %v", err)
	}
	t.Cleanup(cleanup)
	return db
}

func TestSettingsPrecedenceAndEncryption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	c, err := NewCipher(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MAX_UPLOAD_SIZE": "2048"}
	s, err := NewSettingsStore(ctx, db, c, func(k string) string { return env[k] }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// default, env, db
	if got := s.Get("RATE_LIMIT_DEFAULT"); got != "100/minute" {
		t.Fatalf("default: %q", got)
	}
	st, _ := s.Lookup(ctx, "MAX_UPLOAD_SIZE")
	if st.Value != "2048" || st.Source != "env" {
		t.Fatalf("env: %+v", st)
	}
	if _, err := s.Set(ctx, "MAX_UPLOAD_SIZE", "4096"); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Lookup(ctx, "MAX_UPLOAD_SIZE")
	if st.Value != "4096" || st.Source != "db" {
		t.Fatalf("db: %+v", st)
	}
	if err := s.Delete(ctx, "MAX_UPLOAD_SIZE"); err != nil {
		t.Fatal(err)
	}
	if s.Get("MAX_UPLOAD_SIZE") != "2048" {
		t.Fatal("delete did not fall back to env")
	}
	// Validation and unknown keys.
	if _, err := s.Set(ctx, "MAX_UPLOAD_SIZE", "lots"); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("invalid integer: %v", err)
	}
	if _, err := s.Set(ctx, "AUTH_ENABLED", "maybe"); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("invalid bool: %v", err)
	}
	if _, err := s.Set(ctx, "NO_SUCH_KEY", "1"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("unknown key: %v", err)
	}
	// Sensitive values are encrypted at rest and readable after a reload.
	if _, err := s.Set(ctx, "OPENAI_API_KEY", "sk-secret-value"); err != nil {
		t.Fatal(err)
	}
	var raw string
	var enc bool
	if err := db.Pool.QueryRow(ctx, `SELECT value, encrypted FROM settings WHERE key='OPENAI_API_KEY'`).Scan(&raw, &enc); err != nil {
		t.Fatal(err)
	}
	if !enc || strings.Contains(raw, "sk-secret") {
		t.Fatalf("stored in clear: %q", raw)
	}
	s2, err := NewSettingsStore(ctx, db, c, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if s2.Get("OPENAI_API_KEY") != "sk-secret-value" {
		t.Fatal("reload lost the sensitive value")
	}
	// Another SESSION_SECRET cannot read it: env/default applies instead.
	other, _ := NewCipher(strings.Repeat("x", 32))
	s3, err := NewSettingsStore(ctx, db, other, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if s3.Get("OPENAI_API_KEY") != "" {
		t.Fatal("value readable under another secret")
	}
	if _, err := NewCipher("short"); err == nil {
		t.Fatal("short secret accepted")
	}
}

func TestMigrateTwiceConcurrently(t *testing.T) {
	t.Parallel()
	db := openTest(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- db.Migrate(context.Background())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var n int
	db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pipelines WHERE name=$1`, docflow.StandardPipelineName).Scan(&n) //nolint:errcheck
	if n != 1 {
		t.Fatalf("standard pipeline seeded %d times", n)
	}
}

// The store refuses a value the service cannot use (the settings API's
// 422), keeps the one it had, and Validate names every effective value
// that cannot be used with where it came from.
func TestSettingsRefuseValuesTheServiceCannotUse(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	c, err := NewCipher(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"STEP_RETRY_DELAYS": "1,1"}
	s, err := NewSettingsStore(ctx, db, c, func(k string) string { return env[k] }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatalf("equal delays refused: %v", err)
	}
	for key, value := range map[string]string{"STEP_RETRY_DELAYS": "1,x", "KAFKA_PARTITIONS": "0",
		"RATE_LIMIT_UPLOAD": "600/fortnight", "BASE_URL": "docs.example.com", "LISTEN_ADDR": "8000"} {
		_, err := s.Set(ctx, key, value)
		if docflow.ErrorCode(err) != docflow.EINVALID || !strings.HasPrefix(docflow.ErrorMessage(err), key+"=") {
			t.Errorf("Set %s=%q: %v", key, value, err)
		}
		if st, _ := s.Lookup(ctx, key); st.Source == "db" {
			t.Errorf("%s stored after a refusal: %+v", key, st)
		}
	}
	if _, err := s.Set(ctx, "STEP_RETRY_DELAYS", "2s,2s,10s"); err != nil {
		t.Fatal(err)
	}

	// Values stored before they were checked, and the environment's.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ('KAFKA_PARTITIONS', '0')`); err != nil {
		t.Fatal(err)
	}
	env["TEXT_QUALITY_THRESHOLD"] = "150"
	if err := s.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	err = s.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`KAFKA_PARTITIONS="0" (set through the settings API): must be between 1 and 10000`,
		`TEXT_QUALITY_THRESHOLD="150" (from the environment): must be between 0 and 100`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// Two stores on one database, as two processes have: a value set, changed
// or removed through one reaches the other through the table's
// notification, with no reload asked for; a change made by hand in SQL too.
func TestSettingsChangeReachesOtherProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	c, err := NewCipher(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "UPLOAD_RATE_LIMIT_WINDOW" {
			return "90"
		}
		return ""
	}
	a, err := NewSettingsStore(ctx, db, c, env, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewSettingsStore(ctx, db, c, env, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan []string, 10)
	b.OnChange(func(keys []string) { changed <- keys })
	b.Start()
	t.Cleanup(b.Close)
	<-b.Listening()

	if _, err := a.Set(ctx, "UPLOAD_RATE_LIMIT_WINDOW", "120"); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "B sees the value A set", func() bool { return b.Get("UPLOAD_RATE_LIMIT_WINDOW") == "120" })
	if keys := <-changed; len(keys) != 1 || keys[0] != "UPLOAD_RATE_LIMIT_WINDOW" {
		t.Fatalf("OnChange heard %v", keys)
	}
	// Sensitive: sealed in the table, readable in B.
	if _, err := a.Set(ctx, "OPENAI_API_KEY", "sk-from-a"); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "B sees the sealed value", func() bool { return b.Get("OPENAI_API_KEY") == "sk-from-a" })
	if err := a.Delete(ctx, "UPLOAD_RATE_LIMIT_WINDOW"); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "B falls back to the environment", func() bool { return b.Get("UPLOAD_RATE_LIMIT_WINDOW") == "90" })
	if _, err := db.Pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ('WATCH_FOLDER_INTERVAL', '7')`); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "B sees a change made in SQL", func() bool { return b.Get("WATCH_FOLDER_INTERVAL") == "7" })
	if _, err := db.Pool.Exec(ctx, `TRUNCATE settings`); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "B sees the table emptied", func() bool {
		return b.Get("WATCH_FOLDER_INTERVAL") == "10" && b.Get("OPENAI_API_KEY") == ""
	})
}

// SetMany stores the values it can use in one transaction, reports the
// others by key, and checks rules across settings with the batch in place.
func TestSettingsSetMany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	c, err := NewCipher(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSettingsStore(ctx, db, c, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	s.EnvOnly("DATABASE_URL")
	set, failed, err := s.SetMany(ctx, map[string]string{
		"UPLOAD_RATE_LIMIT_WINDOW": "30", "STEP_TIMEOUT": "soon", "NO_SUCH": "1",
		"DATABASE_URL": "postgres://x@h/db", "AUTH_ENABLED": "true", "ADMIN_PASSWORD": "a long enough password",
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, st := range set {
		keys = append(keys, st.Key)
	}
	if strings.Join(keys, ",") != "AUTH_ENABLED,ADMIN_PASSWORD,UPLOAD_RATE_LIMIT_WINDOW" {
		t.Fatalf("stored %v", keys)
	}
	for key, code := range map[string]string{"STEP_TIMEOUT": docflow.EINVALID, "NO_SUCH": docflow.ENOTFOUND, "DATABASE_URL": docflow.EINVALID} {
		if got := docflow.ErrorCode(failed[key]); got != code {
			t.Errorf("%s: %v, want %s", key, failed[key], code)
		}
	}
	if !strings.Contains(docflow.ErrorMessage(failed["STEP_TIMEOUT"]), "STEP_TIMEOUT") {
		t.Errorf("the error does not name the setting: %v", failed["STEP_TIMEOUT"])
	}
	// A short password with authentication on breaks the rule: refused,
	// and the store keeps the long one.
	if _, failed, _ = s.SetMany(ctx, map[string]string{"ADMIN_PASSWORD": "short"}); docflow.ErrorCode(failed["ADMIN_PASSWORD"]) != docflow.EINVALID {
		t.Fatalf("short password: %v", failed)
	}
	if s.Get("ADMIN_PASSWORD") != "a long enough password" {
		t.Fatal("the refused password replaced the stored one")
	}
}
