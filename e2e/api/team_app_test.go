package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"strings"
	"testing"
)

// TestTeamWorksOnOneDocument: two local users and an SSO user, each signed
// in through their browser (password sign-in, or the provider's flow),
// share, comment on and annotate one document; the role table decides
// what each may do (the full table over every route is checked with tokens
// by TestRoleTableOverTheAPI).
func TestTeamWorksOnOneDocument(t *testing.T) {
	e := newSSOEnv(t)
	base := e.app.URL

	admin := newClient(t, base)
	if st := admin.login("admin", "local-admin-pw"); st != 200 {
		t.Fatalf("admin sign-in: %d", st)
	}
	for _, u := range []map[string]any{
		{"email": "alice@example.com", "username": "alice", "display_name": "Alice", "password": "alice-password"},
		{"email": "carol@example.com", "username": "carol", "display_name": "Carol", "password": "carol-password"},
	} {
		admin.must(201, "POST", "/api/admin/users/local", u)
	}
	alice, carol := newClient(t, base), newClient(t, base)
	if st := alice.login("alice", "alice-password"); st != 200 {
		t.Fatalf("alice sign-in: %d", st)
	}
	if st := carol.login("carol@example.com", "carol-password"); st != 200 {
		t.Fatalf("carol sign-in by e-mail: %d", st)
	}
	// Bob signs in through the OpenID Connect provider.
	bb := newBrowser(t)
	if p := e.signIn(bb, "/oauth-login", "bob"); p.Status != 303 && p.Status != 302 {
		t.Fatalf("bob SSO sign-in: %d %.200s", p.Status, p.Body)
	}
	bob := &client{t: t, base: base, hc: bb.c}
	bob.must(200, "GET", "/api/files", nil)

	// Alice uploads a document: it is hers.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile("file", "team-notes.txt")
	fw.Write([]byte("Quarterly plan of the team.\n"))
	mw.Close()
	st, out := alice.do("POST", "/api/upload", mp.String(), "Content-Type", mw.FormDataContentType())
	if st != 201 {
		t.Fatalf("upload: %d %s", st, out)
	}
	var up struct {
		FileID int64 `json:"file_id"`
	}
	if err := json.Unmarshal([]byte(out), &up); err != nil || up.FileID == 0 {
		t.Fatalf("upload answer: %s", out)
	}
	file := fmt.Sprintf("/api/files/%d", up.FileID)

	// Before any share, the others may not even look at it.
	for name, c := range map[string]*client{"carol": carol, "bob": bob} {
		if st, _ := c.do("GET", file, nil); st != 403 {
			t.Fatalf("%s reads an unshared file: %d", name, st)
		}
	}
	// Only the owner shares: carol as editor, bob (his id is his e-mail) as viewer.
	alice.must(201, "POST", file+"/shares", map[string]any{"shared_with_user_id": "carol@example.com", "role": "editor"})
	alice.must(201, "POST", file+"/shares", map[string]any{"shared_with_user_id": "bob@example.com", "role": "viewer"})
	if st, _ := carol.do("POST", file+"/shares", map[string]any{"shared_with_user_id": "dave@example.com"}); st != 403 {
		t.Fatalf("an editor shares: %d", st)
	}
	if st, _ := alice.do("POST", file+"/shares", map[string]any{"shared_with_user_id": "alice@example.com"}); st != 422 {
		t.Fatalf("sharing with oneself: %d", st)
	}

	// Everyone with access sees the file and who it is shared with.
	for name, c := range map[string]*client{"alice": alice, "carol": carol, "bob": bob} {
		c.must(200, "GET", file, nil)
		if w := c.must(200, "GET", file+"/shared-with", nil); !strings.Contains(w, "bob@example.com") {
			t.Fatalf("%s's shared-with: %s", name, w)
		}
	}

	// The editor comments and mentions bob; the owner replies; the viewer may only read.
	var c1 struct {
		ID       int64    `json:"id"`
		Mentions []string `json:"mentions"`
	}
	json.Unmarshal([]byte(carol.must(201, "POST", file+"/comments", map[string]any{"body": "Checked the figures, @bob@example.com please look at page 1 ✓"})), &c1)
	if c1.ID == 0 || len(c1.Mentions) != 1 || c1.Mentions[0] != "bob@example.com" {
		t.Fatalf("carol's comment: %+v", c1)
	}
	alice.must(201, "POST", file+"/comments", map[string]any{"body": "Thanks @carol", "parent_id": c1.ID})
	if st, _ := bob.do("POST", file+"/comments", map[string]any{"body": "may I?"}); st != 403 {
		t.Fatalf("a viewer comments: %d", st)
	}
	var thread struct {
		Total    int `json:"total"`
		Comments []struct {
			Body    string `json:"body"`
			Replies []struct {
				UserID string `json:"user_id"`
			} `json:"replies"`
		} `json:"comments"`
	}
	json.Unmarshal([]byte(bob.must(200, "GET", file+"/comments", nil)), &thread)
	if thread.Total != 2 || len(thread.Comments) != 1 || len(thread.Comments[0].Replies) != 1 ||
		thread.Comments[0].Replies[0].UserID != "alice@example.com" || !strings.HasSuffix(thread.Comments[0].Body, "✓") {
		t.Fatalf("the thread as bob reads it: %+v", thread)
	}
	// Only the author edits; the owner may resolve.
	cpath := fmt.Sprintf("%s/comments/%d", file, c1.ID)
	if st, _ := alice.do("PUT", cpath, map[string]any{"body": "rewritten by the owner"}); st != 403 {
		t.Fatalf("the owner edits another's comment: %d", st)
	}
	carol.must(200, "PUT", cpath, map[string]any{"body": "Checked the figures twice."})
	alice.must(200, "PATCH", cpath+"/resolve", map[string]any{"is_resolved": true})

	// Annotations: editor and owner annotate, the viewer may not.
	ann := map[string]any{"page": 1, "x": 0.1, "y": 0.2, "width": 0.3, "height": 0.05,
		"content": "total", "annotation_type": "highlight", "color": "#FFCC00"}
	carol.must(201, "POST", file+"/annotations", ann)
	ann["annotation_type"], ann["y"] = "note", 0.6
	alice.must(201, "POST", file+"/annotations", ann)
	if st, _ := bob.do("POST", file+"/annotations", ann); st != 403 {
		t.Fatalf("a viewer annotates: %d", st)
	}
	var anns struct {
		Total       int `json:"total"`
		Annotations []struct {
			UserID string `json:"user_id"`
			Color  string `json:"color"`
		} `json:"annotations"`
	}
	json.Unmarshal([]byte(bob.must(200, "GET", file+"/annotations", nil)), &anns)
	if anns.Total != 2 || anns.Annotations[0].UserID != "carol@example.com" || anns.Annotations[0].Color != "#ffcc00" {
		t.Fatalf("annotations as bob reads them: %+v", anns)
	}

	// Neither the editor nor the viewer deletes the document; revoking
	// bob's share ends his access.
	for name, c := range map[string]*client{"carol": carol, "bob": bob} {
		if st, _ := c.do("DELETE", file, nil); st != 403 {
			t.Fatalf("%s deletes: %d", name, st)
		}
	}
	var shares []struct {
		ID     int64  `json:"id"`
		UserID string `json:"shared_with_user_id"`
	}
	json.Unmarshal([]byte(alice.must(200, "GET", file+"/shares", nil)), &shares)
	for _, s := range shares {
		if s.UserID == "bob@example.com" {
			alice.must(200, "DELETE", fmt.Sprintf("%s/shares/%d", file, s.ID), nil)
		}
	}
	if st, _ := bob.do("GET", file+"/comments", nil); st != 403 {
		t.Fatalf("bob after his share was revoked: %d", st)
	}
	// The share changes are in the audit log, by the owner.
	if log := admin.must(200, "GET", "/api/admin/audit-log?actor=alice@example.com&action=share.delete", nil); !strings.Contains(log, `"total":1`) {
		t.Fatalf("audit of the revocation: %s", log)
	}
}
