package http

import (
	"fmt"
	"testing"
)

// TestReactivateActiveTokenIs400: only a revoked token can be reactivated.
func TestReactivateActiveTokenIs400(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	owner := e.token("alice")
	resp, body := e.do("POST", "/api/api-tokens/", owner, map[string]any{"name": "ci"})
	e.expect(resp, body, 201)
	id := e.id(e.json(body))
	resp, body = e.do("POST", fmt.Sprintf("/api/api-tokens/%d/reactivate", id), owner, nil)
	e.expect(resp, body, 400)
	if d := e.json(body)["detail"]; d != "Token is already active" {
		t.Fatalf("detail %v", d)
	}
	// Revoked, it can be reactivated once.
	resp, body = e.do("DELETE", fmt.Sprintf("/api/api-tokens/%d", id), owner, nil)
	e.expect(resp, body, 200)
	resp, body = e.do("POST", fmt.Sprintf("/api/api-tokens/%d/reactivate", id), owner, nil)
	e.expect(resp, body, 200)
	resp, body = e.do("POST", fmt.Sprintf("/api/api-tokens/%d/reactivate", id), owner, nil)
	e.expect(resp, body, 400)
	// Unknown ids stay 404.
	resp, body = e.do("POST", fmt.Sprintf("/api/api-tokens/%d/reactivate", id+1000), owner, nil)
	e.expect(resp, body, 404)
}
