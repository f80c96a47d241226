package http

import "testing"

// TestProcessAllIsAdminOnly: the shared processall folder is ingested by an
// administrator only (in single-user mode the single user is one).
func TestProcessAllIsAdminOnly(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root"})
	fe.SetEnv("PROCESSALL_DIR", t.TempDir())
	resp, raw := fe.do("POST", "/api/processall", fe.token("alice"), nil)
	fe.expect(resp, raw, 403)
	resp, raw = fe.do("POST", "/api/processall", fe.token("root"), nil)
	fe.expect(resp, raw, 200)
	fe.SetEnv("AUTH_ENABLED", "false")
	resp, raw = fe.do("POST", "/api/processall", "", nil)
	fe.expect(resp, raw, 200)
}
