package api_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	// The original's work folder, as mounted on the docflow machine.
	workdir := filepath.Join(t.TempDir(), "docuelevate", "workdir")
	if err := legacytest.WriteWorkFolder(workdir); err != nil {
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
		Unmapped    []struct {
			Table  string `json:"table"`
			Reason string `json:"reason"`
		} `json:"unmapped"`
	}
	// A work folder that is not there is refused before anything starts.
	e.admin.must(422, "POST", "/api/database/migrate", map[string]any{"source_url": built.URL, "source_files_dir": workdir + "-nowhere"})
	json.Unmarshal([]byte(e.admin.must(202, "POST", "/api/database/migrate", map[string]any{ //nolint:errcheck
		"source_url": built.URL, "target_url": "", "source_files_dir": workdir})), &job)
	if !job.Success || job.JobID == 0 || job.ProgressURL == "" {
		t.Fatalf("migrate: %+v", job)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the import to finish", func() bool {
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
	// The documents came with their records: each downloads and
	// previews byte for byte as the original kept it.
	var files struct {
		Files []struct {
			ID   int64  `json:"id"`
			Name string `json:"original_filename"`
		} `json:"files"`
	}
	json.Unmarshal([]byte(body), &files) //nolint:errcheck
	ids := map[string]int64{}
	for _, f := range files.Files {
		ids[f.Name] = f.ID
	}
	for _, c := range []struct {
		name, query string
		want        []byte
	}{
		{"invoice.pdf", "/download?version=original", legacytest.InvoicePDF},
		{"invoice.pdf", "/download", legacytest.InvoiceProcessedPDF},
		{"invoice.pdf", "/preview?version=processed", legacytest.InvoiceProcessedPDF},
		{"invoice copy.pdf", "/download?version=original", legacytest.InvoicePDF},
	} {
		if ids[c.name] == 0 {
			t.Fatalf("%s is not among alice's files: %s", c.name, body)
		}
		s, got := e.bearer(legacytest.AliceToken, "GET", fmt.Sprintf("/api/files/%d%s", ids[c.name], c.query), nil)
		if s != 200 || got != string(c.want) {
			t.Errorf("%s%s: %d, %d bytes, want the original's %d", c.name, c.query, s, len(got), len(c.want))
		}
	}
	var letterID int64
	for _, q := range []string{"letter.txt"} {
		var list struct {
			Files []struct {
				ID int64 `json:"id"`
			} `json:"files"`
		}
		json.Unmarshal([]byte(e.admin.must(200, "GET", "/api/files?search="+q, nil)), &list) //nolint:errcheck
		if len(list.Files) != 1 {
			t.Fatalf("search %s: %+v", q, list)
		}
		letterID = list.Files[0].ID
	}
	if got := e.admin.must(200, "GET", fmt.Sprintf("/api/files/%d/preview?version=original", letterID), nil); got != string(legacytest.LetterText) {
		t.Errorf("letter.txt preview: %q", got)
	}
	// The report names the file that was missing and the one whose
	// paths leave the work folder.
	report := ""
	for _, u := range job.Unmapped {
		if u.Table == "files (contents)" {
			report += u.Reason + "\n"
		}
	}
	if !strings.Contains(report, legacytest.ScanOriginalPath+": no file at this path") ||
		!strings.Contains(report, legacytest.TraversalPath+": the path leaves the original's work folder: refused") {
		t.Errorf("contents report:\n%s", report)
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
