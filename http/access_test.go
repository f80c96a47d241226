package http

import (
	"context"
	"fmt"
	"testing"
)

// TestFileRoutesFollowShareRoles checks the files routes against the
// spec's share role table through docflow.Authorize: an editor views and
// edits but does not delete, a viewer only views, another user gets 403,
// and an unclaimed file is an administrator's (another user gets 403 as
// for a file someone owns) until UNCLAIMED_FILES_VISIBLE lets anyone view
// it.
func TestFileRoutesFollowShareRoles(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"})
	ctx := context.Background()
	alice, bob, carol, dave, admin := fe.token("alice"), fe.token("bob"), fe.token("carol"), fe.token("dave"), fe.token("admin")
	resp, m := fe.upload("/api/upload", alice, "alice.pdf", pdf("roles"))
	if resp.StatusCode != 201 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	file := int64(m["file_id"].(float64))
	for user, role := range map[string]string{"bob": "editor", "carol": "viewer"} {
		if _, err := fe.DB.Pool.Exec(ctx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'alice', $2, $3)`, file, user, role); err != nil {
			t.Fatal(err)
		}
	}
	var free int64
	if err := fe.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status)
		VALUES ('hfree', 'free.pdf', 'sfree.pdf', 1, 'application/pdf', 'completed') RETURNING id`).Scan(&free); err != nil {
		t.Fatal(err)
	}

	view := func(id int64) (string, string) { return "GET", fmt.Sprintf("/api/files/%d", id) }
	edit := func(id int64) (string, string) { return "POST", fmt.Sprintf("/api/files/%d/assign-pipeline", id) }
	del := func(id int64) (string, string) { return "DELETE", fmt.Sprintf("/api/files/%d", id) }
	for _, tc := range []struct {
		who   string
		token string
		route func(int64) (string, string)
		id    int64
		want  int
	}{
		{"editor views", bob, view, file, 200},
		{"editor edits", bob, edit, file, 200},
		{"editor deletes", bob, del, file, 403},
		{"viewer views", carol, view, file, 200},
		{"viewer edits", carol, edit, file, 403},
		{"viewer deletes", carol, del, file, 403},
		{"stranger views", dave, view, file, 403},
		{"stranger edits", dave, edit, file, 403},
		{"owner edits", alice, edit, file, 200},
		{"user views unclaimed", dave, view, free, 403},
		{"admin views unclaimed", admin, view, free, 200},
		{"user edits unclaimed", dave, edit, free, 403},
		{"user deletes unclaimed", dave, del, free, 403},
		{"admin edits unclaimed", admin, edit, free, 200},
		{"admin edits another's", admin, edit, file, 200},
		{"owner deletes", alice, del, file, 200},
	} {
		method, path := tc.route(tc.id)
		resp, body := fe.do(method, path, tc.token, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %s %s answered %d, want %d: %s", tc.who, method, path, resp.StatusCode, tc.want, body)
		}
	}
	fe.SetEnv("UNCLAIMED_FILES_VISIBLE", "true")
	resp, body := fe.do("GET", fmt.Sprintf("/api/files/%d", free), dave, nil)
	fe.expect(resp, body, 200)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/assign-pipeline", free), dave, nil)
	fe.expect(resp, body, 403)
}
