package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"testing"

	"docflow/internal/app/apptest"
)

// The resource tests (package http) mount one resource at a time on a bare
// server, some with failing dependencies. The tests here run the API as
// `docflow api` builds it (internal/app's test twin): every resource is
// mounted with its real dependencies.

// TestBuiltAPIMountsEveryResource: each collection of the API answers on
// a fresh api process, and an upload is read back through the files API.
func TestBuiltAPIMountsEveryResource(t *testing.T) {
	a := apptest.New(t, apptest.Options{Role: "api"})
	for _, path := range []string{
		"/api/diagnostic/healthz/ready", "/api/diagnostic/health", "/api/files", "/api/pipelines",
		"/api/pipelines/step-types", "/api/routing-rules", "/api/routing-rules/operators", "/api/queue/stats",
		"/api/queue/pending-count", "/api/classification-rules", "/api/classification-rules/categories",
		"/api/diagnostic/embeddings", "/api/search?q=invoice", "/api/similarity/pairs", "/api/saved-searches",
		"/api/analytics/overview", "/api/analytics/steps", "/api/analytics/lag",
	} {
		if status, body := get(t, a.URL+path); status != 200 {
			t.Errorf("GET %s: %d %s", path, status, body)
		}
	}

	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "note.txt")
	io.WriteString(w, "a note\n") //nolint:errcheck
	mw.Close()
	resp, err := nethttp.Post(a.URL+"/api/upload", mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var up struct {
		FileID int64  `json:"file_id"`
		TaskID string `json:"task_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &up) != nil || up.FileID == 0 || up.TaskID == "" {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	if status, body := get(t, fmt.Sprintf("%s/api/files/%d/download", a.URL, up.FileID)); status != 200 || body != "a note\n" {
		t.Fatalf("download: %d %q", status, body)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := nethttp.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
