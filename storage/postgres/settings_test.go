package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"docflow"
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
	ctx := context.Background()
	db := openTest(t)
	c, err := NewCipher(strings.Repeat("k", 32))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MAX_UPLOAD_SIZE": "2048"}
	s, err := NewSettingsService(ctx, db, c, func(k string) string { return env[k] }, zerolog.Nop())
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
	s2, err := NewSettingsService(ctx, db, c, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if s2.Get("OPENAI_API_KEY") != "sk-secret-value" {
		t.Fatal("reload lost the sensitive value")
	}
	// Another SESSION_SECRET cannot read it: env/default applies instead.
	other, _ := NewCipher(strings.Repeat("x", 32))
	s3, err := NewSettingsService(ctx, db, other, func(string) string { return "" }, zerolog.Nop())
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
