package api_test

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
)

// TestIdempotencyKeyAcrossAPIProcesses: two api processes share the
// database; an upload made through one with a key is answered, not
// repeated, by the other, and concurrent repeats through both make one
// document.
func TestIdempotencyKeyAcrossAPIProcesses(t *testing.T) {
	t.Parallel()
	env := map[string]string{"AUTH_ENABLED": "true"}
	a := apptest.New(t, apptest.Options{Role: "api", Env: env})
	b := apptest.New(t, apptest.Options{Role: "api", DB: a.DB,
		Env: map[string]string{"AUTH_ENABLED": "true", "KAFKA_BROKERS": strings.Join(a.Brokers, ",")}})
	a.LocalUser(t, "alice@example.com", false)
	token := a.Token(t, "alice@example.com")
	send := func(base, key, tag string) (int, string) {
		t.Helper()
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		w, _ := mw.CreateFormFile("file", "shared.pdf")
		w.Write([]byte("%PDF-1.4\n% " + tag + "\n%%EOF\n"))
		mw.Close()
		req, _ := nethttp.NewRequest("POST", base+"/api/upload", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	files := func() int {
		var n int
		if err := a.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM files`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	s1, body1 := send(a.URL, "k-1", "one")
	s2, body2 := send(b.URL, "k-1", "one")
	if s1 != 201 || s2 != 201 || body1 != body2 {
		t.Fatalf("first %d %s; through the other process %d %s", s1, body1, s2, body2)
	}
	if s, body := send(b.URL, "k-1", "other"); s != 422 {
		t.Fatalf("same key, other file through the other process: %d %s", s, body)
	}
	if n := files(); n != 1 {
		t.Fatalf("%d files, want 1", n)
	}

	statuses := acrossTwo(8, a.URL, b.URL, func(base string) int {
		s, _ := send(base, "k-race", "race")
		return s
	})
	if statuses[201] < 1 || statuses[201]+statuses[409] != 8 {
		t.Fatalf("concurrent repeats answered %v", statuses)
	}
	if n := files(); n != 2 {
		t.Fatalf("%d files after concurrent repeats across processes, want 2", n)
	}
}
