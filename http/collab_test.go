package http

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

// collabEnv is a server with the sharing, comment and annotation routes
// and an audit log, over files inserted directly.
type collabEnv struct {
	*testEnv
	audit *postgres.AuditLog
}

func newCollabEnv(t *testing.T, env map[string]string) *collabEnv {
	t.Helper()
	ce := &collabEnv{}
	ce.testEnv = newTestEnv(t, env, func(e *testEnv) {
		ce.audit = postgres.NewAuditLog(e.DB)
		e.Server.cfg.Audit = ce.audit
		e.Server.MountCollab(CollabDeps{Files: postgres.NewFileStore(e.DB), Shares: postgres.NewShareStore(e.DB),
			Comments: postgres.NewCommentStore(e.DB), Annotations: postgres.NewAnnotationStore(e.DB)})
	})
	return ce
}

// file inserts a completed file owned by owner ("" = unclaimed).
func (ce *collabEnv) file(owner string) int64 {
	ce.t.Helper()
	var o *string
	if owner != "" {
		o = &owner
	}
	var id int64
	if err := ce.DB.Pool.QueryRow(context.Background(), `INSERT INTO files (filehash, original_filename, stored_filename,
		file_size, mime_type, status, owner_id) VALUES (md5(random()::text), 'doc.pdf', 's', 1, 'application/pdf', 'completed', $1)
		RETURNING id`, o).Scan(&id); err != nil {
		ce.t.Fatal(err)
	}
	return id
}

// localUser adds a local account (the mention tests resolve usernames).
func (ce *collabEnv) localUser(email, username string) {
	ce.t.Helper()
	if _, err := ce.DB.Pool.Exec(context.Background(), `INSERT INTO local_users (email, username, password_hash)
		VALUES ($1, $2, 'x')`, email, username); err != nil {
		ce.t.Fatal(err)
	}
}

func (ce *collabEnv) call(method, path, token string, body any, want int) map[string]any {
	ce.t.Helper()
	resp, b := ce.do(method, path, token, body)
	ce.expect(resp, b, want)
	if len(b) == 0 || b[0] != '{' {
		return nil
	}
	return ce.json(b)
}

func multiUser() map[string]string {
	return map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"}
}

func TestSharesLifecycle(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, multiUser())
	alice, bob, carol := ce.token("alice"), ce.token("bob"), ce.token("carol")
	f := ce.file("alice")
	base := fmt.Sprintf("/api/files/%d", f)

	sh := ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "bob"}, 201)
	if sh["role"] != "viewer" || sh["owner_id"] != "alice" || sh["shared_with_user_id"] != "bob" || sh["file_id"].(float64) != float64(f) {
		t.Fatalf("default share %v", sh)
	}
	id := int64(sh["id"].(float64))
	// Sharing again with the same user updates the role of that share.
	again := ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "bob", "role": "editor"}, 201)
	if int64(again["id"].(float64)) != id || again["role"] != "editor" {
		t.Fatalf("second share %v", again)
	}
	if n := countRows(ce.testEnv, `SELECT count(*) FROM shares WHERE file_id=$1`, f); n != 1 {
		t.Fatalf("%d shares", n)
	}
	ce.DB.Pool.Exec(context.Background(), `INSERT INTO user_profiles (user_id, display_name) VALUES ('bob', 'Bob B.')`) //nolint:errcheck

	resp, b := ce.do("GET", base+"/shares", alice, nil)
	ce.expect(resp, b, 200)
	var list []docflow.Share
	decode(t, b, &list)
	if len(list) != 1 || list[0].Role != "editor" {
		t.Fatalf("shares %s", b)
	}
	// Bob (editor) may read who has access, not manage shares.
	resp, b = ce.do("GET", base+"/shared-with", bob, nil)
	ce.expect(resp, b, 200)
	var with []docflow.SharedWith
	decode(t, b, &with)
	if len(with) != 1 || with[0].ShareID != id || with[0].DisplayName != "Bob B." || with[0].UserID != "bob" || with[0].Role != "editor" {
		t.Fatalf("shared-with %s", b)
	}
	ce.call("GET", base+"/shares", bob, nil, 403)
	ce.call("POST", base+"/shares", bob, map[string]any{"shared_with_user_id": "carol"}, 403)
	ce.call("GET", base+"/shared-with", carol, nil, 403)

	upd := ce.call("PUT", fmt.Sprintf("%s/shares/%d", base, id), alice, map[string]any{"role": "viewer"}, 200)
	if upd["role"] != "viewer" {
		t.Fatalf("put %v", upd)
	}
	ce.call("PUT", fmt.Sprintf("%s/shares/%d", base, id), bob, map[string]any{"role": "editor"}, 403)
	del := ce.call("DELETE", fmt.Sprintf("%s/shares/%d", base, id), alice, nil, 200)
	if del["status"] != "success" || del["message"] == "" {
		t.Fatalf("delete %v", del)
	}
	ce.call("GET", base+"/shared-with", bob, nil, 403)
	ce.call("DELETE", fmt.Sprintf("%s/shares/%d", base, id), alice, nil, 404)

	// Every change is in the audit log.
	entries, _, err := ce.audit.ListAudit(context.Background(), docflow.AuditFilter{Page: 1, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		if e.Target != fmt.Sprintf("share:%d", id) || e.Actor != "alice" || e.ClientIP == "" {
			t.Fatalf("audit entry %+v", e)
		}
		actions = append([]string{e.Action}, actions...)
	}
	if strings.Join(actions, ",") != "share.create,share.update,share.update,share.delete" {
		t.Fatalf("audited %v", actions)
	}
}

func TestSharesBadInput(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, multiUser())
	alice, bob, admin := ce.token("alice"), ce.token("bob"), ce.token("admin")
	f, other, free := ce.file("alice"), ce.file("alice"), ce.file("")
	base := fmt.Sprintf("/api/files/%d", f)
	sh := ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "bob", "role": "editor"}, 201)
	id := int64(sh["id"].(float64))

	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"shared_with_user_id": "alice"}, "shared_with_user_id"},
		{map[string]any{"shared_with_user_id": ""}, "shared_with_user_id"},
		{map[string]any{"shared_with_user_id": "   "}, "shared_with_user_id"},
		{map[string]any{}, "shared_with_user_id"},
		{map[string]any{"shared_with_user_id": "carol", "role": "owner"}, "role"},
		{map[string]any{"shared_with_user_id": 5}, "shared_with_user_id"},
		{map[string]any{"shared_with_user_id": "carol", "role": true}, "role"},
		{`{"shared_with_user_id": "carol"`, ""},
		{`[1]`, ""},
	} {
		resp, b := ce.do("POST", base+"/shares", alice, tc.body)
		ce.expect(resp, b, 422)
		if tc.field != "" && !strings.Contains(string(b), `"field":"`+tc.field+`"`) {
			t.Errorf("%v: %s does not name %s", tc.body, b, tc.field)
		}
	}
	// Admins manage shares as the owner would, but not for the owner.
	ce.call("POST", base+"/shares", admin, map[string]any{"shared_with_user_id": "alice"}, 422)
	ce.call("POST", base+"/shares", admin, map[string]any{"shared_with_user_id": "dave"}, 201)
	ce.call("POST", fmt.Sprintf("/api/files/%d/shares", free), admin, map[string]any{"shared_with_user_id": "dave"}, 400)
	ce.call("POST", "/api/files/999999/shares", alice, map[string]any{"shared_with_user_id": "bob"}, 404)
	ce.call("GET", "/api/files/999999/shares", alice, nil, 404)
	ce.call("GET", "/api/files/999999/shared-with", alice, nil, 404)
	ce.call("PUT", fmt.Sprintf("%s/shares/999999", base), alice, map[string]any{"role": "viewer"}, 404)
	// A share is found only under its own file.
	ce.call("PUT", fmt.Sprintf("/api/files/%d/shares/%d", other, id), alice, map[string]any{"role": "viewer"}, 404)
	ce.call("DELETE", fmt.Sprintf("/api/files/%d/shares/%d", other, id), alice, nil, 404)
	ce.call("PUT", fmt.Sprintf("%s/shares/%d", base, id), alice, map[string]any{"role": "admin"}, 422)
	ce.call("PUT", fmt.Sprintf("%s/shares/%d", base, id), alice, map[string]any{}, 422)
	ce.call("PUT", fmt.Sprintf("%s/shares/abc", base), alice, map[string]any{"role": "viewer"}, 422)
	// The editor may not delete a share, not even their own.
	ce.call("DELETE", fmt.Sprintf("%s/shares/%d", base, id), bob, nil, 403)
}

func TestSharesNeedMultiUserMode(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, nil)
	f := ce.file("alice")
	base := fmt.Sprintf("/api/files/%d", f)
	ce.call("POST", base+"/shares", "", map[string]any{"shared_with_user_id": "bob"}, 400)
	ce.call("PUT", base+"/shares/1", "", map[string]any{"role": "viewer"}, 400)
	ce.call("DELETE", base+"/shares/1", "", nil, 400)
	resp, b := ce.do("GET", base+"/shares", "", nil)
	ce.expect(resp, b, 200)
	if strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("shares %s", b)
	}
	// Comments work in single-user mode, under the local admin's id.
	c := ce.call("POST", base+"/comments", "", map[string]any{"body": "hello @bob"}, 201)
	if c["user_id"] != "admin" {
		t.Fatalf("single-user comment %v", c)
	}
	ce.call("PUT", fmt.Sprintf("%s/comments/%d", base, int64(c["id"].(float64))), "", map[string]any{"body": "edited"}, 200)
}
