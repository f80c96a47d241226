package http

import (
	"context"
	"fmt"
	"testing"
)

func TestOwnershipSingleUserModeRefusesClaims(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	id := fe.mustUpload("x.pdf", pdf("single"))
	resp, body := fe.do("POST", fmt.Sprintf("/api/files/%d/claim", id), "", nil)
	fe.expect(resp, body, 400)
	resp, body = fe.do("POST", "/api/files/bulk-claim", "", []int64{id})
	fe.expect(resp, body, 400)
	resp, body = fe.do("POST", "/api/files/assign-owner?owner_id=bob", "", nil)
	fe.expect(resp, body, 400)
}

func TestOwnershipMultiUser(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"})
	ctx := context.Background()
	alice, bob, admin := fe.token("alice"), fe.token("bob"), fe.token("admin")

	resp, m := fe.upload("/api/upload", alice, "alice.pdf", pdf("alice"))
	if resp.StatusCode != 201 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	aliceFile := int64(m["file_id"].(float64))
	if n := fe.count(`SELECT count(*) FROM files WHERE id=$1 AND owner_id='alice'`, aliceFile); n != 1 {
		t.Fatal("upload not owned by its uploader")
	}
	// Two unclaimed files (as a watch folder leaves them).
	var free1, free2 int64
	fe.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status)
		VALUES ('h1', 'free1.pdf', 's1.pdf', 1, 'application/pdf', 'completed') RETURNING id`).Scan(&free1)
	fe.DB.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status)
		VALUES ('h2', 'free2.pdf', 's2.pdf', 1, 'application/pdf', 'completed') RETURNING id`).Scan(&free2)

	// Visibility: bob sees none of alice's files.
	resp, body := fe.do("GET", "/api/files", bob, nil)
	fe.expect(resp, body, 200)
	if total := fe.json(body)["pagination"].(map[string]any)["total"].(float64); total != 0 {
		t.Fatalf("bob sees %v files", total)
	}
	resp, body = fe.do("GET", "/api/files", alice, nil)
	if total := fe.json(body)["pagination"].(map[string]any)["total"].(float64); total != 1 {
		t.Fatalf("alice sees %v files", total)
	}
	resp, body = fe.do("GET", "/api/files", admin, nil)
	if total := fe.json(body)["pagination"].(map[string]any)["total"].(float64); total != 3 {
		t.Fatalf("admin sees %v files", total)
	}
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d", aliceFile), bob, nil)
	fe.expect(resp, body, 403)
	resp, body = fe.do("DELETE", fmt.Sprintf("/api/files/%d", aliceFile), bob, nil)
	fe.expect(resp, body, 403)
	// A viewer share lets bob read but not change.
	fe.DB.Pool.Exec(ctx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role) VALUES ($1, 'alice', 'bob', 'viewer')`, aliceFile)
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d", aliceFile), bob, nil)
	fe.expect(resp, body, 200)
	resp, body = fe.do("GET", "/api/files", bob, nil)
	if total := fe.json(body)["pagination"].(map[string]any)["total"].(float64); total != 1 {
		t.Fatalf("bob sees %v shared files", total)
	}
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/reprocess", aliceFile), bob, nil)
	fe.expect(resp, body, 403)

	// Claims: unclaimed files are administrators' to claim, and a user's
	// claim is refused as for another user's file ...
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/claim", free1), "", nil)
	fe.expect(resp, body, 401)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/claim", aliceFile), bob, nil)
	fe.expect(resp, body, 403)
	resp, body = fe.do("POST", "/api/files/999999/claim", bob, nil)
	fe.expect(resp, body, 404)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/claim", free1), bob, nil)
	fe.expect(resp, body, 403)
	resp, body = fe.do("POST", "/api/files/bulk-claim", bob, []int64{free1, free2})
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["claimed_count"].(float64) != 0 ||
		fmt.Sprint(m["skipped"]) != fmt.Sprintf("[map[file_id:%d reason:owned by another user] map[file_id:%d reason:owned by another user]]", free1, free2) {
		t.Fatalf("bulk claim of files bob may not see %v", m)
	}
	// ... unless every signed-in user may see and claim them.
	fe.SetEnv("UNCLAIMED_FILES_VISIBLE", "true")
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/claim", free1), bob, nil)
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["status"] != "success" || m["owner_id"] != "bob" || m["file_id"].(float64) != float64(free1) {
		t.Fatalf("claim %v", m)
	}
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/claim", free1), alice, nil)
	fe.expect(resp, body, 403)

	resp, body = fe.do("POST", "/api/files/bulk-claim", alice, []int64{free1, free2, aliceFile, 888888})
	fe.expect(resp, body, 200)
	m = fe.json(body)
	if m["claimed_count"].(float64) != 1 || fmt.Sprint(m["claimed_ids"]) != fmt.Sprint([]any{float64(free2)}) || len(m["skipped"].([]any)) != 3 || m["owner_id"] != "alice" {
		t.Fatalf("bulk claim %v", m)
	}
	for _, bad := range []any{"[]", `{"ids":[1]}`} {
		resp, body = fe.do("POST", "/api/files/bulk-claim", alice, bad)
		fe.expect(resp, body, 422)
	}

	// assign-owner: admin only, owner_id required, ids optional.
	resp, body = fe.do("POST", "/api/files/assign-owner?owner_id=carol", bob, nil)
	fe.expect(resp, body, 403)
	resp, body = fe.do("POST", "/api/files/assign-owner", admin, nil)
	fe.expect(resp, body, 422)
	resp, body = fe.do("POST", "/api/files/assign-owner?owner_id=carol", admin, []int64{free1})
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["updated_count"].(float64) != 1 || m["owner_id"] != "carol" {
		t.Fatalf("assign %v", m)
	}
	fe.DB.Pool.Exec(ctx, `UPDATE files SET owner_id=NULL WHERE id=$1`, free2)
	resp, body = fe.do("POST", "/api/files/assign-owner?owner_id=dave", admin, nil)
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["updated_count"].(float64) != 1 {
		t.Fatalf("assign unclaimed %v", m)
	}
	if n := fe.count(`SELECT count(*) FROM files WHERE owner_id IS NULL`); n != 0 {
		t.Fatalf("%d unclaimed left", n)
	}
}
