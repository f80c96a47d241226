package api_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"docflow/internal/testsupport"
	"docflow/storage/legacy/legacytest"
)

// TestDatabaseWizardImportsTheOriginal: an administrator tests the
// original service's SQLite file, previews it, imports it and follows the
// job's progress; then the original's users sign in with their passwords
// and its API tokens keep working, and a copy into docflow's own database
// is refused.
func TestDatabaseWizardImportsTheOriginal(t *testing.T) {
	t.Parallel()
	e := newAccountsEnv(t)
	path := filepath.Join(t.TempDir(), "docuelevate.db")
	if err := legacytest.Build(context.Background(), path); err != nil {
		t.Fatal(err)
	}

	var backends []map[string]any
	json.Unmarshal([]byte(e.admin.must(200, "GET", "/api/database/backends", nil)), &backends) //nolint:errcheck
	if len(backends) != 2 || backends[0]["id"] != "postgresql" || backends[0]["default_port"] != 5432.0 {
		t.Fatalf("backends: %v", backends)
	}
	var built struct {
		URL string `json:"url"`
	}
	json.Unmarshal([]byte(e.admin.must(200, "POST", "/api/database/build-url", map[string]any{ //nolint:errcheck
		"backend": "sqlite", "database": path})), &built)
	if built.URL != "sqlite://"+path {
		t.Fatalf("build-url: %q", built.URL)
	}
	e.admin.must(422, "POST", "/api/database/build-url", map[string]any{"backend": "postgresql", "database": "x"})

	var test struct {
		Success       bool   `json:"success"`
		Message       string `json:"message"`
		ServerVersion string `json:"server_version"`
	}
	json.Unmarshal([]byte(e.admin.must(200, "POST", "/api/database/test-connection", map[string]any{"url": built.URL})), &test) //nolint:errcheck
	if !test.Success || test.ServerVersion == "" {
		t.Fatalf("test-connection: %+v", test)
	}
	json.Unmarshal([]byte(e.admin.must(200, "POST", "/api/database/test-connection", //nolint:errcheck
		map[string]any{"url": "postgres://u:wrong@127.0.0.1:1/x?sslmode=disable"})), &test)
	if test.Success || !strings.Contains(test.Message, "could not connect") {
		t.Fatalf("unreachable: %+v", test)
	}
	var preview struct {
		Success   bool  `json:"success"`
		TotalRows int64 `json:"total_rows"`
		Tables    []struct {
			Name     string `json:"name"`
			RowCount int64  `json:"row_count"`
		} `json:"tables"`
	}
	json.Unmarshal([]byte(e.admin.must(200, "POST", "/api/database/preview-migration", map[string]any{"url": built.URL})), &preview) //nolint:errcheck
	if !preview.Success || preview.TotalRows == 0 || len(preview.Tables) < 15 {
		t.Fatalf("preview: %+v", preview)
	}

	var job struct {
		Success     bool   `json:"success"`
		JobID       int64  `json:"job_id"`
		Status      string `json:"status"`
		RowsCopied  int64  `json:"rows_copied"`
		ProgressURL string `json:"progress_url"`
		Unmapped    []any  `json:"unmapped"`
	}
	json.Unmarshal([]byte(e.admin.must(202, "POST", "/api/database/migrate", map[string]any{"source_url": built.URL, "target_url": ""})), &job) //nolint:errcheck
	if !job.Success || job.JobID == 0 || job.ProgressURL == "" {
		t.Fatalf("migrate: %+v", job)
	}
	testsupport.WaitFor(t, 60*time.Second, "the import to finish", func() bool {
		json.Unmarshal([]byte(e.admin.must(200, "GET", job.ProgressURL, nil)), &job) //nolint:errcheck
		return job.Status != "running"
	})
	if job.Status != "completed" || job.RowsCopied == 0 || len(job.Unmapped) == 0 {
		t.Fatalf("import: %+v", job)
	}

	// The original's token works as it did, with its owner's files.
	status, body := e.bearer(legacytest.AliceToken, "GET", "/api/files", nil)
	if status != 200 || !strings.Contains(body, "invoice.pdf") {
		t.Fatalf("the original's token: %d %s", status, body)
	}
	// Its users sign in with their passwords.
	if s := newClient(t, e.a.URL).login("alice", legacytest.AlicePassword); s != 200 {
		t.Fatalf("alice's sign-in: %d", s)
	}
	// The wizard is the administrators'.
	if s, _ := e.bearer(legacytest.AliceToken, "POST", "/api/database/test-connection", map[string]any{"url": built.URL}); s != 403 {
		t.Fatalf("a user's test-connection: %d", s)
	}
	// Copying docflow's database into itself is refused.
	s, b := e.admin.do("POST", "/api/database/migrate", map[string]any{"source_url": "", "target_url": e.a.DB.URL})
	if s != 422 || !strings.Contains(b, "database docflow runs on") {
		t.Fatalf("copy into docflow's own database: %d %s", s, b)
	}
	// A source out of reach is an answer, not a failure.
	s, b = e.admin.do("POST", "/api/database/migrate", map[string]any{"source_url": "postgres://u:p@127.0.0.1:1/x?sslmode=disable"})
	if s != 200 || !strings.Contains(b, `"success":false`) {
		t.Fatalf("unreachable source: %d %s", s, b)
	}
}
