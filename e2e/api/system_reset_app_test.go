package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// The system reset over the whole API: refused while disabled, to anyone
// but an administrator and for a wrong confirmation; a full reset of a
// process holding documents, comments, tokens and users; a reimport whose
// documents come back through a worker's watch folder and pipeline, the
// worker having heard the reset.

func resetEnv(extra map[string]string) map[string]string {
	env := map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin",
		"ADMIN_PASSWORD": "admin-password", "WATCH_FOLDER_INTERVAL": "1"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// uploadAs uploads a text file with the client's session (or the bearer
// token when not empty) and returns the file id.
func uploadAs(t *testing.T, c *client, token, name, content string) int64 {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", name)
	io.WriteString(w, content) //nolint:errcheck
	mw.Close()
	req, _ := nethttp.NewRequest("POST", c.base+"/api/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var up struct {
		FileID int64 `json:"file_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &up) != nil || up.FileID == 0 {
		t.Fatalf("upload %s: %d %s", name, resp.StatusCode, b)
	}
	return up.FileID
}

type listedFile struct {
	ID               int64  `json:"id"`
	OriginalFilename string `json:"original_filename"`
	Processing       struct {
		Status string `json:"status"`
	} `json:"processing_status"`
}

// files lists every file the client sees.
func files(t *testing.T, c *client, hdr ...string) []listedFile {
	t.Helper()
	status, body := c.do("GET", "/api/files?per_page=100", nil, hdr...)
	var out struct {
		Files []listedFile `json:"files"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("list files: %d %s", status, body)
	}
	return out.Files
}

// waitStatus waits until the client sees n files, each with status want.
func waitStatus(t *testing.T, c *client, n int, want string, hdr ...string) []listedFile {
	t.Helper()
	var got []listedFile
	done := func() bool {
		got = files(t, c, hdr...)
		if len(got) != n {
			return false
		}
		for _, f := range got {
			if f.Processing.Status != want {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(5 * time.Minute); !done(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %d files %s: %+v", n, want, got)
		}
	}
	return got
}

type resetAnswer struct {
	Status string `json:"status"`
	Result struct {
		ID         string           `json:"reset_id"`
		Database   map[string]int64 `json:"database"`
		Filesystem struct {
			DeletedDirs  int `json:"deleted_dirs"`
			DeletedFiles int `json:"deleted_files"`
		} `json:"filesystem"`
		Reimport *struct {
			FilesMoved     int    `json:"files_moved"`
			ReimportFolder string `json:"reimport_folder"`
		} `json:"reimport"`
	} `json:"result"`
}

func blobCount(t *testing.T, workdir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(workdir, "blobs"), func(_ string, d fs.DirEntry, err error) error { //nolint:errcheck
		if err == nil && d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}

// TestSystemResetRefusals: a reset is 403 while ENABLE_FACTORY_RESET is
// off and for a user who is no administrator, 422 for a wrong or missing
// confirmation; none of them changes anything.
func TestSystemResetRefusals(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "api", Env: resetEnv(nil)})
	admin := newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}
	admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": "bob@example.com", "username": "bob", "password": "bob-password"})
	bob := newClient(t, a.URL)
	if s := bob.login("bob", "bob-password"); s != 200 {
		t.Fatalf("bob sign-in: %d", s)
	}
	uploadAs(t, admin, "", "keep.txt", "keep me\n")

	if got := strings.TrimSpace(admin.must(200, "GET", "/api/admin/system-reset/status", nil)); got != `{"enabled":false,"factory_reset_on_startup":false}` {
		t.Fatalf("status: %s", got)
	}
	admin.must(403, "POST", "/api/admin/system-reset/full", map[string]string{"confirmation": "DELETE"})
	admin.must(403, "POST", "/api/admin/system-reset/reimport", map[string]string{"confirmation": "REIMPORT"})

	a.SetEnv("ENABLE_FACTORY_RESET", "true")
	bob.must(403, "GET", "/api/admin/system-reset/status", nil)
	bob.must(403, "POST", "/api/admin/system-reset/full", map[string]string{"confirmation": "DELETE"})
	for _, tc := range []struct{ path, body string }{
		{"full", `{"confirmation":"delete"}`},
		{"full", `{"confirmation":"REIMPORT"}`},
		{"full", `{}`},
		{"reimport", `{"confirmation":"DELETE"}`},
	} {
		status, body := admin.do("POST", "/api/admin/system-reset/"+tc.path, tc.body)
		if status != 422 || !strings.Contains(body, "confirmation") {
			t.Errorf("%s %s: %d %s, want 422 naming the confirmation", tc.path, tc.body, status, body)
		}
	}
	if got := files(t, admin); len(got) != 1 || got[0].OriginalFilename != "keep.txt" {
		t.Fatalf("files after refused resets: %+v", got)
	}
	if s := bob.login("bob", "bob-password"); s != 200 {
		t.Fatalf("bob's account is gone after refused resets: %d", s)
	}
	if _, body := admin.do("GET", "/api/admin/audit-log?action=system.reset", nil); !strings.Contains(body, `"total":0`) {
		t.Fatalf("a refused reset audited as done: %s", body)
	}
}

// TestSystemResetFull: a serve process holding processed and indexed
// documents, a comment, a user's account and tokens is reset: the answer
// counts the rows of each table and the files removed; documents, blobs,
// search hits, the user, the tokens and the sessions are gone; the
// administrator signs in again, finds the reset in the audit log and
// uploads a document the standard pipeline processes.
func TestSystemResetFull(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: resetEnv(map[string]string{"ENABLE_FACTORY_RESET": "true"})})
	admin := newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("admin sign-in: %d", s)
	}
	admin.must(201, "POST", "/api/admin/users/local", map[string]any{"email": "bob@example.com", "username": "bob", "password": "bob-password"})
	bobToken := a.Token(t, "bob@example.com")
	bob := newClient(t, a.URL)
	first := uploadAs(t, bob, bobToken, "zebra-one.txt", "zebra crossing one\n")
	uploadAs(t, bob, bobToken, "zebra-two.txt", "zebra crossing two\n")
	auth := []string{"Authorization", "Bearer " + bobToken}
	waitStatus(t, bob, 2, "completed", auth...)
	if status, body := bob.do("POST", fmt.Sprintf("/api/files/%d/comments", first), map[string]string{"body": "a comment"}, auth...); status != 201 && status != 200 {
		t.Fatalf("comment: %d %s", status, body)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the documents indexed", func() bool {
		_, body := bob.do("GET", "/api/search?q=zebra", nil, auth...)
		return strings.Contains(body, `"total":2`)
	})
	if blobCount(t, a.Dir()) == 0 {
		t.Fatal("no blobs stored before the reset")
	}

	status, body := admin.do("POST", "/api/admin/system-reset/full", map[string]string{"confirmation": "DELETE"})
	var res resetAnswer
	if status != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Status != "success" {
		t.Fatalf("reset: %d %s", status, body)
	}
	db := res.Result.Database
	if db["files"] != 2 || db["comments"] != 1 || db["api_tokens"] < 1 || db["local_users"] != 1 || db["sessions"] < 1 {
		t.Errorf("counts: %v", db)
	}
	if _, ok := db["settings"]; ok {
		t.Errorf("settings reported wiped: %v", db)
	}
	if res.Result.Filesystem.DeletedFiles < 2 {
		t.Errorf("files removed: %+v", res.Result.Filesystem)
	}
	if n := blobCount(t, a.Dir()); n != 0 {
		t.Errorf("%d blobs left after the reset", n)
	}

	if s, _ := bob.do("GET", "/api/files", nil, auth...); s != 401 {
		t.Errorf("a wiped token still works: %d", s)
	}
	if s := newClient(t, a.URL).login("bob", "bob-password"); s == 200 {
		t.Error("a wiped account signs in")
	}
	if s, _ := admin.do("GET", "/api/files", nil); s != 401 {
		t.Errorf("a wiped session still works: %d", s)
	}
	admin = newClient(t, a.URL)
	if s := admin.login("admin", "admin-password"); s != 200 {
		t.Fatalf("the administrator cannot sign in after the reset: %d", s)
	}
	if got := files(t, admin); len(got) != 0 {
		t.Errorf("files after the reset: %+v", got)
	}
	if _, body := admin.do("GET", "/api/search?q=zebra", nil); !strings.Contains(body, `"total":0`) {
		t.Errorf("search after the reset: %s", body)
	}
	if _, body := admin.do("GET", "/api/admin/audit-log", nil); !strings.Contains(body, `"action":"system.reset"`) || !strings.Contains(body, res.Result.ID) {
		t.Errorf("the reset is not in the audit log: %s", body)
	}
	if _, body := admin.do("GET", "/api/pipelines", nil); !strings.Contains(body, "Standard Processing Pipeline") {
		t.Errorf("the standard pipeline is gone: %s", body)
	}
	uploadAs(t, admin, "", "after.txt", "after the reset\n")
	if got := waitStatus(t, admin, 1, "completed"); got[0].OriginalFilename != "after.txt" {
		t.Fatalf("after the reset: %+v", got)
	}
}

// TestSystemResetReimport: an api process and a worker share the
// database, the broker and WORKDIR. A reimport moves each original (a
// duplicate's once) to the reimport folder and wipes; the worker hears the
// reset, watches the folder and takes the documents in again, through the
// standard pipeline, under their names.
func TestSystemResetReimport(t *testing.T) {
	t.Parallel()
	env := resetEnv(map[string]string{"ENABLE_FACTORY_RESET": "true"})
	a := apptest.New(t, apptest.Options{Role: "api", Env: env})
	wenv := resetEnv(map[string]string{"ENABLE_FACTORY_RESET": "true", "KAFKA_BROKERS": strings.Join(a.Brokers, ",")})
	w := apptest.New(t, apptest.Options{Role: "worker", DB: a.DB, Workdir: a.Dir(), Env: wenv})

	token := a.Token(t, "admin")
	c := newClient(t, a.URL)
	auth := []string{"Authorization", "Bearer " + token}
	uploadAs(t, c, token, "invoice.txt", "invoice number 1\n")
	uploadAs(t, c, token, "letter.txt", "a letter\n")
	uploadAs(t, c, token, "invoice-copy.txt", "invoice number 1\n") // a duplicate
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		got, n := files(t, c, auth...), 0
		for _, f := range got {
			if f.Processing.Status == "completed" || f.Processing.Status == "duplicate" {
				n++
			}
		}
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for the documents processed: %+v", got)
		}
	}

	status, body := c.do("POST", "/api/admin/system-reset/reimport", map[string]string{"confirmation": "REIMPORT"}, auth...)
	var res resetAnswer
	if status != 200 || json.Unmarshal([]byte(body), &res) != nil || res.Result.Reimport == nil {
		t.Fatalf("reimport: %d %s", status, body)
	}
	folder := filepath.Join(a.Dir(), "reimport")
	if abs, _ := filepath.Abs(folder); res.Result.Reimport.ReimportFolder != abs || res.Result.Reimport.FilesMoved != 2 {
		t.Fatalf("reimport result: %+v", res.Result.Reimport)
	}
	if res.Result.Database["files"] != 3 {
		t.Errorf("counts: %v", res.Result.Database)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the worker hears the reset", func() bool { return w.LastReset() == res.Result.ID })

	c = newClient(t, a.URL)
	token = a.Token(t, "admin") // the old one was wiped
	auth = []string{"Authorization", "Bearer " + token}
	back := waitStatus(t, c, 2, "completed", auth...)
	names := map[string]bool{}
	for _, f := range back {
		names[f.OriginalFilename] = true
	}
	if !names["invoice.txt"] || !names["letter.txt"] {
		t.Fatalf("documents back: %+v", back)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the originals moved out of the watch folder", func() bool {
		entries, _ := os.ReadDir(folder)
		for _, e := range entries {
			if e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".incoming") {
				return false
			}
		}
		return true
	})
}
