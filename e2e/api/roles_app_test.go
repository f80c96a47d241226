package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"docflow"
	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// The spec's share role table, checked over the whole API as `docflow api`
// builds it, in multi-user mode with authentication: every kind of route
// that reaches a file, asked by the file's owner, an editor, a viewer, a
// stranger and an administrator.

const (
	rOwner    = "owner"
	rEditor   = "editor"
	rViewer   = "viewer"
	rStranger = "stranger"
	rAdmin    = "admin"
)

var roleNames = []string{rOwner, rEditor, rViewer, rStranger, rAdmin}

// roleUsers are the user ids behind the roles (admin is ADMIN_USERNAME's
// default).
var roleUsers = map[string]string{rOwner: "olga@example.com", rEditor: "ed@example.com", rViewer: "vic@example.com",
	rStranger: "sam@example.com", rAdmin: "admin"}

type roleEnv struct {
	t      *testing.T
	a      *apptest.App
	tokens map[string]string
	search *postgres.SearchStore
	seq    int
}

func newRoleEnv(t *testing.T) *roleEnv {
	return newRoleEnvWith(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"}})
}

// newRoleEnvWith is newRoleEnv on a process built with o (which sets
// AUTH_ENABLED and MULTI_USER_ENABLED itself).
func newRoleEnvWith(t *testing.T, o apptest.Options) *roleEnv {
	a := apptest.New(t, o)
	re := &roleEnv{t: t, a: a, tokens: map[string]string{}, search: postgres.NewSearchStore(a.DB)}
	tokens := postgres.NewTokenStore(a.DB)
	for role, id := range roleUsers {
		if id != docflow.AdminUserID(a.Settings) {
			a.LocalUser(t, id, false)
		}
		plain := dfhttp.NewToken()
		if err := tokens.CreateToken(context.Background(), &docflow.APIToken{OwnerID: id, Name: role, TokenPrefix: plain[:12],
			TokenHash: dfhttp.HashToken(plain)}); err != nil {
			t.Fatal(err)
		}
		re.tokens[role] = plain
	}
	return re
}

func (re *roleEnv) do(role, method, path string, body any) (int, []byte) {
	re.t.Helper()
	var r io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			re.t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	req, err := nethttp.NewRequest(method, re.a.URL+path, r)
	if err != nil {
		re.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+re.tokens[role])
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		re.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (re *roleEnv) must(role, method, path string, body any, want int) []byte {
	re.t.Helper()
	status, b := re.do(role, method, path, body)
	if status != want {
		re.t.Fatalf("%s %s as %s: %d, want %d: %s", method, path, role, status, want, b)
	}
	return b
}

// doc uploads a document as the owner, shares it with the editor and the
// viewer through the API, completes it with text and an embedding, and
// indexes it as the indexer would.
// pair records two documents as a similar pair. The pipeline may have
// recorded the pair already (the indexer computes neighbours as each
// document is indexed), so an existing row is updated.
func (re *roleEnv) pair(x, y int64) {
	re.t.Helper()
	if _, err := re.a.DB.Pool.Exec(context.Background(), `INSERT INTO similarity_pairs (file_a, file_b, score) VALUES ($1, $2, 0.99)
		ON CONFLICT (file_a, file_b) DO UPDATE SET score = EXCLUDED.score`, min(x, y), max(x, y)); err != nil {
		re.t.Fatal(err)
	}
}

func (re *roleEnv) doc(vec []float32) int64 {
	re.t.Helper()
	ctx := context.Background()
	re.seq++
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", fmt.Sprintf("note%d.txt", re.seq))
	fmt.Fprintf(w, "zebra note %d\n", re.seq)
	mw.Close()
	req, _ := nethttp.NewRequest("POST", re.a.URL+"/api/upload", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+re.tokens[rOwner])
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		re.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var up struct {
		FileID int64 `json:"file_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &up) != nil || up.FileID == 0 {
		re.t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	id := up.FileID
	for _, role := range []string{rEditor, rViewer} {
		re.must(rOwner, "POST", fmt.Sprintf("/api/files/%d/shares", id), map[string]any{"shared_with_user_id": roleUsers[role], "role": role}, 201)
	}
	if _, err := re.a.DB.Pool.Exec(ctx, `UPDATE files SET status='completed', ocr_text='zebra crossing', document_title='Zebra'
		WHERE id=$1`, id); err != nil {
		re.t.Fatal(err)
	}
	if err := re.search.PutEmbedding(ctx, &docflow.Embedding{FileID: id, Model: "test", Vector: vec}); err != nil {
		re.t.Fatal(err)
	}
	docs, err := re.search.SearchDocuments(ctx, []int64{id})
	if err != nil || docs[id] == nil {
		re.t.Fatalf("search document: %v", err)
	}
	if failed, err := re.a.Index.Index(ctx, []*docflow.SearchDocument{docs[id]}); err != nil || len(failed) > 0 {
		re.t.Fatalf("index: %v %v", failed, err)
	}
	return id
}

// routeCase is one kind of route: a request on file id and the status each
// role gets (a role absent from want gets wantOthers).
type routeCase struct {
	name   string
	method string
	path   string // %d is the file id
	body   any
	// fresh runs each role on a document of its own (the route changes it
	// for good).
	fresh bool
	want  map[string]int
	// check, when set, reads the answer of a permitted role further.
	check func(t *testing.T, role string, id int64, body []byte)
}

func all(status int) map[string]int {
	return map[string]int{rOwner: status, rEditor: status, rViewer: status, rAdmin: status, rStranger: 403}
}

func only(status, refused int, roles ...string) map[string]int {
	m := map[string]int{}
	for _, r := range roleNames {
		m[r] = refused
		if slices.Contains(roles, r) {
			m[r] = status
		}
	}
	return m
}

func TestRoleTableOverTheAPI(t *testing.T) {
	t.Parallel()
	re := newRoleEnv(t)
	file := re.doc([]float32{1, 0})
	near := re.doc([]float32{1, 0.05})
	re.pair(file, near)
	// A comment of the editor's, which only the editor may change.
	var cm struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal(re.must(rEditor, "POST", fmt.Sprintf("/api/files/%d/comments", file), map[string]any{"body": "editor's"}, 201), &cm) //nolint:errcheck
	var an struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal(re.must(rEditor, "POST", fmt.Sprintf("/api/files/%d/annotations", file), map[string]any{"page": 1, "x": 0.1, "y": 0.1}, 201), &an) //nolint:errcheck

	contains := func(want bool, key string) func(*testing.T, string, int64, []byte) {
		return func(t *testing.T, role string, id int64, body []byte) {
			if got := bytes.Contains(body, []byte(fmt.Sprintf(`"%s":%d`, key, id))); got != want {
				t.Errorf("%s: file %d listed %v, want %v: %.300s", role, id, got, want, body)
			}
		}
	}
	listed := func(key string) func(*testing.T, string, int64, []byte) {
		return func(t *testing.T, role string, id int64, body []byte) {
			contains(role != rStranger, key)(t, role, id, body)
		}
	}
	skipped := func(t *testing.T, role string, id int64, body []byte) {
		var out struct {
			Processed []struct {
				FileID int64 `json:"file_id"`
			} `json:"processed_files"`
			Errors []struct {
				FileID int64  `json:"file_id"`
				Error  string `json:"error"`
			} `json:"errors"`
		}
		json.Unmarshal(body, &out) //nolint:errcheck
		refused := slices.ContainsFunc(out.Errors, func(e struct {
			FileID int64  `json:"file_id"`
			Error  string `json:"error"`
		}) bool {
			return e.FileID == id && e.Error == "File not found"
		})
		if want := role == rViewer || role == rStranger; refused != want || (want && len(out.Processed) > 0) {
			t.Errorf("%s: bulk-reprocess refused %v, want %v: %s", role, refused, want, body)
		}
	}

	cases := []routeCase{
		// Listings: everyone gets 200; the stranger does not see the file.
		{name: "files list", method: "GET", path: "/api/files?per_page=200", want: map[string]int{rOwner: 200, rEditor: 200, rViewer: 200, rAdmin: 200, rStranger: 200}, check: listed("id")},
		{name: "search", method: "GET", path: "/api/search?q=zebra", want: map[string]int{rOwner: 200, rEditor: 200, rViewer: 200, rAdmin: 200, rStranger: 200}, check: listed("file_id")},
		{name: "similarity pairs", method: "GET", path: "/api/similarity/pairs?threshold=0.5", want: map[string]int{rOwner: 200, rEditor: 200, rViewer: 200, rAdmin: 200, rStranger: 200}, check: listed("file_id")},
		// View.
		{name: "detail", method: "GET", path: "/api/files/%d", want: all(200)},
		{name: "metadata", method: "GET", path: "/api/files/%d/metadata", want: all(200)},
		{name: "preview", method: "GET", path: "/api/files/%d/preview?version=original", want: all(200)},
		{name: "download", method: "GET", path: "/api/files/%d/download?version=original", want: all(200)},
		{name: "similar", method: "GET", path: "/api/files/%d/similar", want: all(200), check: func(t *testing.T, role string, id int64, body []byte) {
			contains(true, "file_id")(t, role, near, body)
		}},
		{name: "embedding status", method: "GET", path: "/api/files/%d/embedding-status", want: all(200)},
		{name: "shared-with", method: "GET", path: "/api/files/%d/shared-with", want: all(200)},
		{name: "comments", method: "GET", path: "/api/files/%d/comments", want: all(200)},
		{name: "annotations", method: "GET", path: "/api/files/%d/annotations", want: all(200)},
		{name: "bulk-download", method: "POST", path: "/api/files/bulk-download", body: "ids", want: map[string]int{rOwner: 200, rEditor: 200, rViewer: 200, rAdmin: 200, rStranger: 404}},
		// Comment and annotate.
		{name: "comment", method: "POST", path: "/api/files/%d/comments", body: map[string]any{"body": "hi"}, want: only(201, 403, rOwner, rEditor, rAdmin)},
		{name: "annotate", method: "POST", path: "/api/files/%d/annotations", body: map[string]any{"page": 1, "x": 0, "y": 0}, want: only(201, 403, rOwner, rEditor, rAdmin)},
		{name: "resolve", method: "PATCH", path: fmt.Sprintf("/api/files/%%d/comments/%d/resolve", cm.ID), body: map[string]any{"is_resolved": true}, want: only(200, 403, rOwner, rEditor, rAdmin)},
		// Author only, whatever the role.
		{name: "edit a comment", method: "PUT", path: fmt.Sprintf("/api/files/%%d/comments/%d", cm.ID), body: map[string]any{"body": "changed"}, want: only(200, 403, rEditor)},
		{name: "edit an annotation", method: "PUT", path: fmt.Sprintf("/api/files/%%d/annotations/%d", an.ID), body: map[string]any{"content": "changed"}, want: only(200, 403, rEditor)},
		// Edit.
		{name: "assign pipeline", method: "POST", path: "/api/files/%d/assign-pipeline", want: only(200, 403, rOwner, rEditor, rAdmin)},
		{name: "bulk-reprocess", method: "POST", path: "/api/files/bulk-reprocess", body: "ids", want: map[string]int{rOwner: 200, rEditor: 200, rViewer: 200, rAdmin: 200, rStranger: 200}, fresh: true, check: skipped},
		// Share.
		{name: "list shares", method: "GET", path: "/api/files/%d/shares", want: only(200, 403, rOwner, rAdmin)},
		{name: "share", method: "POST", path: "/api/files/%d/shares", body: map[string]any{"shared_with_user_id": "guest@example.com"}, want: only(201, 403, rOwner, rAdmin)},
		// Delete.
		{name: "delete", method: "DELETE", path: "/api/files/%d", fresh: true, want: only(200, 403, rOwner, rAdmin)},
		{name: "bulk-delete", method: "POST", path: "/api/files/bulk-delete", body: "ids", fresh: true, want: only(200, 404, rOwner, rAdmin)},
	}
	for _, tc := range cases {
		for _, role := range roleNames {
			id := file
			if tc.fresh {
				id = re.doc([]float32{0, 1})
			}
			path := tc.path
			if strings.Contains(path, "%d") {
				path = fmt.Sprintf(path, id)
			}
			body := tc.body
			if body == "ids" {
				body = []int64{id}
			}
			status, b := re.do(role, tc.method, path, body)
			if status != tc.want[role] {
				t.Errorf("%s as %s: %s %s answered %d, want %d: %.300s", tc.name, role, tc.method, path, status, tc.want[role], b)
				continue
			}
			if tc.check != nil && status < 300 {
				tc.check(t, role, id, b)
			}
		}
	}
}

// TestSharedDocumentReachesSearch: a share made after a document was
// indexed re-indexes it (the shares trigger's file.updated), so the new
// reader finds it; removing the share hides it again.
func TestSharedDocumentReachesSearch(t *testing.T) {
	t.Parallel()
	re := newRoleEnv(t)
	id := re.doc([]float32{1, 0})
	found := func(role string) bool {
		_, b := re.do(role, "GET", "/api/search?q=zebra", nil)
		return bytes.Contains(b, []byte(fmt.Sprintf(`"file_id":%d`, id)))
	}
	if found(rStranger) {
		t.Fatal("the stranger finds the document before any share")
	}
	var sh struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal(re.must(rOwner, "POST", fmt.Sprintf("/api/files/%d/shares", id), map[string]any{"shared_with_user_id": roleUsers[rStranger]}, 201), &sh) //nolint:errcheck
	testsupport.WaitFor(t, 3*time.Minute, "search after sharing", func() bool { return found(rStranger) })
	re.must(rOwner, "DELETE", fmt.Sprintf("/api/files/%d/shares/%d", id, sh.ID), nil, 200)
	testsupport.WaitFor(t, 3*time.Minute, "search after unsharing", func() bool { return !found(rStranger) })
}
