package http

import (
	"context"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// tokenID returns the id of the token plain (looked up by its owner's list).
func tokenID(e *testEnv, plain string) int64 {
	e.t.Helper()
	var id int64
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT id FROM api_tokens WHERE token_hash=$1`, HashToken(plain)).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// TestSingleUserTokensBelongToAdmin: a token made without authentication
// belongs to the admin account (ADMIN_USERNAME), so once AUTH_ENABLED is
// turned on it is in the admin's list like any other; tokens left without
// an owner by earlier versions are handed to the admin, and until then
// confer no admin rights.
func TestSingleUserTokensBelongToAdmin(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"ADMIN_USERNAME": "root", "ADMIN_PASSWORD": "pw"}, func(e *testEnv) {
		e.Server.Handle("GET", "/api/test-admin", Route{Auth: AuthAdmin}, func(c *fasthttp.RequestCtx) error {
			writeJSON(c, 200, Detail{Detail: "ok"})
			return nil
		})
	})
	resp, body := e.do("POST", "/api/api-tokens/", "", map[string]any{"name": "made in single-user mode"})
	e.expect(resp, body, 201)
	plain := e.json(body)["token"].(string)
	if n := countRows(e, `SELECT count(*) FROM api_tokens WHERE owner_id='root'`); n != 1 {
		t.Fatalf("%d tokens owned by root, want 1", n)
	}
	resp, body = e.do("GET", "/api/api-tokens/", "", nil)
	if e.expect(resp, body, 200); !strings.Contains(string(body), "made in single-user mode") {
		t.Fatalf("single-user list %s", body)
	}

	e.SetEnv("AUTH_ENABLED", "true")
	resp, body = e.do("GET", "/api/api-tokens/", plain, nil)
	if e.expect(resp, body, 200); !strings.Contains(string(body), "made in single-user mode") {
		t.Fatalf("the token's own list %s", body)
	}
	resp, body = e.do("POST", "/login", "", `{"username":"root","password":"pw"}`)
	e.expect(resp, body, 200)
	cookie := resp.Header.Get("Set-Cookie")
	cookie = cookie[:strings.Index(cookie, ";")]
	resp, body = e.do("GET", "/api/api-tokens/", "", nil, "Cookie", cookie)
	if e.expect(resp, body, 200); !strings.Contains(string(body), "made in single-user mode") {
		t.Fatalf("admin's list after sign-in %s", body)
	}

	// A row an earlier version left without an owner: no admin rights, and
	// handed to the admin at start-up.
	orphan := NewToken()
	if _, err := e.DB.Pool.Exec(context.Background(), `INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash) VALUES ('', 'orphan', $1, $2)`,
		orphan[:12], HashToken(orphan)); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do("GET", "/api/test-admin", orphan, nil)
	e.expect(resp, body, 403)
	n, err := e.Tokens.AdoptOwnerlessTokens(context.Background(), "root")
	if err != nil || n != 1 {
		t.Fatalf("adopt: %d %v", n, err)
	}
	resp, body = e.do("GET", "/api/api-tokens/", "", nil, "Cookie", cookie)
	if e.expect(resp, body, 200); !strings.Contains(string(body), `"orphan"`) {
		t.Fatalf("adopted token not listed %s", body)
	}
}

// TestTokenReactivationNeedsOwnerControl: a revoked token comes back only
// through its owner's session or a token of the owner's that was not
// itself revoked later than it, or through an admin.
func TestTokenReactivationNeedsOwnerControl(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root"})
	a, b, c := e.token("alice"), e.token("alice"), e.token("alice")
	ida, idb := tokenID(e, a), tokenID(e, b)
	revoke := func(id int64, by string) {
		t.Helper()
		resp, body := e.do("DELETE", "/api/api-tokens/"+itoa(id), by, nil)
		e.expect(resp, body, 200)
	}
	reactivate := func(id int64, by string, status int) {
		t.Helper()
		resp, body := e.do("POST", "/api/api-tokens/"+itoa(id)+"/reactivate", by, nil)
		e.expect(resp, body, status)
	}
	revoke(ida, c)
	revoke(idb, c)
	reactivate(idb, c, 200)
	// b was revoked after a: it cannot bring a back.
	reactivate(ida, b, 403)
	// c never was.
	reactivate(ida, c, 200)
	// Someone else's token cannot see it; an admin can bring it back.
	revoke(ida, c)
	reactivate(ida, e.token("bob"), 404)
	reactivate(ida, e.token("root"), 200)
	resp, body := e.do("GET", "/api/api-tokens/", a, nil)
	e.expect(resp, body, 200)
}
