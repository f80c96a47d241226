package http

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"docflow"
	"docflow/intake"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
)

// usersEnv is a multi-user server with intake, the files API, the
// profile routes and the audit log on a real database; "admin" is the
// administrator.
type usersEnv struct {
	*filesEnv
	Profiles *postgres.ProfileStore
}

func newUsersEnv(t *testing.T, env map[string]string) *usersEnv {
	t.Helper()
	all := map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true", "ADMIN_USERNAME": "admin"}
	for k, v := range env {
		all[k] = v
	}
	ue := &usersEnv{filesEnv: &filesEnv{}}
	fe := ue.filesEnv
	fe.testEnv = newTestEnv(t, all, func(e *testEnv) {
		var err error
		if fe.Blobs, err = blob.Open(t.TempDir(), blob.Options{NoSync: true}); err != nil {
			t.Fatal(err)
		}
		fe.Files = postgres.NewFileStore(e.DB)
		fe.Intake, err = intake.New(intake.Config{Files: fe.Files, Blobs: fe.Blobs, Settings: e.Settings, Log: zerolog.Nop(),
			WorkDir: t.TempDir(), LoadPerCPU: func() float64 { return 0 }})
		if err != nil {
			t.Fatal(err)
		}
		e.Server.MountUploads(UploadDeps{Intake: fe.Intake})
		e.Server.MountFiles(FilesDeps{Files: fe.Files, Blobs: fe.Blobs, Intake: fe.Intake, Pipelines: postgres.NewPipelineStore(e.DB)})
		e.Server.cfg.Audit = postgres.NewAuditLog(e.DB)
		e.Server.mountAudit()
		ue.Profiles = postgres.NewProfileStore(e.DB, streams.EncodeEvent)
		e.Server.MountUsers(UsersDeps{Profiles: ue.Profiles})
	})
	t.Cleanup(fe.Intake.Close)
	return ue
}

func TestUsersRoutesCoexistWithLocalAccounts(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, func(e *testEnv) {
		e.Server.MountUsers(UsersDeps{Profiles: postgres.NewProfileStore(e.DB, streams.EncodeEvent)})
		// The local accounts' routes, as their resource mounts them.
		a := Route{Auth: AuthAdmin}
		local := func(name string) Handler {
			return func(c *fasthttp.RequestCtx) error {
				id, _ := c.UserValue("local_user_id").(string)
				writeJSON(c, 200, map[string]string{"route": name, "id": id})
				return nil
			}
		}
		e.Server.Handle("GET", "/api/admin/users/local", a, local("local-list"))
		e.Server.Handle("POST", "/api/admin/users/local", a, local("local-create"))
		e.Server.Handle("PATCH", "/api/admin/users/local/{local_user_id}", a, local("local-patch"))
		e.Server.Handle("DELETE", "/api/admin/users/local/{local_user_id}", a, local("local-delete"))
		e.Server.Handle("POST", "/api/admin/users/local/{local_user_id}/set-password", a, local("local-set-password"))
		e.Server.Handle("POST", "/api/admin/users/local/{local_user_id}/send-password-reset", a, local("local-reset"))
	})
	for _, c := range []struct{ method, path, route, id string }{
		{"GET", "/api/admin/users/local", "local-list", ""},
		{"GET", "/api/admin/users/local/", "local-list", ""},
		{"POST", "/api/admin/users/local", "local-create", ""},
		{"PATCH", "/api/admin/users/local/7", "local-patch", "7"},
		{"DELETE", "/api/admin/users/local/7", "local-delete", "7"},
		{"POST", "/api/admin/users/local/7/set-password", "local-set-password", "7"},
		{"POST", "/api/admin/users/local/7/send-password-reset", "local-reset", "7"},
	} {
		resp, body := e.do(c.method, c.path, "", nil)
		m := e.json(body)
		if resp.StatusCode != 200 || m["route"] != c.route || m["id"] != c.id {
			t.Errorf("%s %s: %d %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	// The profile routes around them, with @ . + in the (encoded) user id.
	id := "ann.lee+docs@example.com"
	resp, body := e.do("PUT", "/api/admin/users/"+url.PathEscape(id), "", map[string]any{"display_name": "Ann"})
	if m := e.json(body); resp.StatusCode != 200 || m["user_id"] != id {
		t.Fatalf("put: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/api/admin/users/ann.lee%2Bdocs%40example.com", "", nil)
	if m := e.json(body); resp.StatusCode != 200 || m["user_id"] != id || m["display_name"] != "Ann" {
		t.Fatalf("get encoded: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("POST", "/api/admin/users/"+id+"/payment-issue", "", map[string]any{"issue": "card expired"})
	if m := e.json(body); resp.StatusCode != 200 || m["acknowledged"] != true || m["user_id"] != id {
		t.Fatalf("payment issue: %d %s", resp.StatusCode, body)
	}
	resp, body = e.do("GET", "/api/admin/users", "", nil)
	if m := e.json(body); resp.StatusCode != 200 || m["total"] != float64(1) {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
}

func TestProfilesAdminAPI(t *testing.T) {
	t.Parallel()
	ue := newUsersEnv(t, nil)
	admin, bob := ue.token("admin"), ue.token("bob@example.com")

	// Non-admins get 403 on every admin route.
	for _, r := range []struct{ method, path string }{{"GET", "/api/admin/users/"}, {"GET", "/api/admin/users/bob@example.com"},
		{"PUT", "/api/admin/users/bob@example.com"}, {"DELETE", "/api/admin/users/bob@example.com"},
		{"POST", "/api/admin/users/bob@example.com/payment-issue"}, {"GET", "/api/admin/audit-log"}} {
		resp, body := ue.do(r.method, r.path, bob, map[string]any{"is_blocked": false, "issue": "x"})
		if resp.StatusCode != 403 {
			t.Errorf("%s %s as bob: %d %s", r.method, r.path, resp.StatusCode, body)
		}
	}
	// Unknown users: 404 for detail, delete and payment issue.
	for _, r := range []struct{ method, path string }{{"GET", "/api/admin/users/nobody"}, {"DELETE", "/api/admin/users/nobody"},
		{"POST", "/api/admin/users/nobody/payment-issue"}} {
		resp, body := ue.do(r.method, r.path, admin, map[string]any{"issue": "x"})
		if resp.StatusCode != 404 {
			t.Errorf("%s %s: %d %s", r.method, r.path, resp.StatusCode, body)
		}
	}
	// Bad values: 422 naming the field.
	for _, c := range []struct {
		body  any
		field string
	}{
		{map[string]any{"subscription_tier": "gold"}, "subscription_tier"},
		{map[string]any{"subscription_tier": nil}, "subscription_tier"},
		{map[string]any{"preferred_language": "pt"}, "preferred_language"},
		{map[string]any{"daily_upload_limit": -1}, "daily_upload_limit"},
		{map[string]any{"daily_upload_limit": 1.5}, "daily_upload_limit"},
		{map[string]any{"daily_upload_limit": "5"}, "daily_upload_limit"},
		{map[string]any{"is_blocked": "yes"}, "is_blocked"},
		{map[string]any{"display_name": strings.Repeat("x", 201)}, "display_name"},
		{map[string]any{"notes": 5}, "notes"},
	} {
		resp, body := ue.do("PUT", "/api/admin/users/bob@example.com", admin, c.body)
		if resp.StatusCode != 422 || !strings.Contains(string(body), c.field) {
			t.Errorf("PUT %v: %d %s", c.body, resp.StatusCode, body)
		}
	}
	resp, body := ue.do("PUT", "/api/admin/users/bob@example.com", admin, "[1]")
	ue.expect(resp, body, 422)

	// PUT creates, then updates; the response is the profile.
	resp, body = ue.do("PUT", "/api/admin/users/bob@example.com", admin, map[string]any{"display_name": "Bob", "daily_upload_limit": 0,
		"notes": "VIP", "subscription_tier": "professional", "preferred_language": "de"})
	ue.expect(resp, body, 200)
	m := ue.json(body)
	if m["user_id"] != "bob@example.com" || m["display_name"] != "Bob" || m["daily_upload_limit"] != float64(0) || m["notes"] != "VIP" ||
		m["subscription_tier"] != "professional" || m["preferred_language"] != "de" || m["is_blocked"] != false || m["profile_id"] == float64(0) {
		t.Fatalf("created: %v", m)
	}
	resp, body = ue.do("PUT", "/api/admin/users/bob@example.com", admin, map[string]any{"notes": nil, "daily_upload_limit": nil})
	ue.expect(resp, body, 200)
	if m = ue.json(body); m["notes"] != nil || m["daily_upload_limit"] != nil || m["display_name"] != "Bob" {
		t.Fatalf("cleared: %v", m)
	}
	if n := ue.count(`SELECT count(*) FROM outbox WHERE topic=$1`, streams.TopicEvents); n != 2 {
		t.Fatalf("%d user events, want signup and plan_changed", n)
	}

	// Bob uploads; the list and the detail count his documents.
	if resp, m := ue.upload("/api/upload", bob, "b.pdf", pdf("bob1")); resp.StatusCode != 201 {
		t.Fatalf("upload: %d %v", resp.StatusCode, m)
	}
	if resp, m := ue.upload("/api/upload", ue.token("carol"), "c.pdf", pdf("carol1")); resp.StatusCode != 201 {
		t.Fatalf("upload: %d %v", resp.StatusCode, m)
	}
	resp, body = ue.do("GET", "/api/admin/users/?q=BOB", admin, nil)
	ue.expect(resp, body, 200)
	m = ue.json(body)
	users, _ := m["users"].([]any)
	if m["total"] != float64(1) || m["page"] != float64(1) || m["per_page"] != float64(25) || m["pages"] != float64(1) || len(users) != 1 {
		t.Fatalf("list: %v", m)
	}
	if u := users[0].(map[string]any); u["document_count"] != float64(1) || u["last_upload"] == nil {
		t.Fatalf("list item: %v", u)
	}
	resp, body = ue.do("GET", "/api/admin/users?per_page=1&page=2", admin, nil)
	ue.expect(resp, body, 200)
	if m = ue.json(body); m["total"] != float64(2) || m["pages"] != float64(2) || m["users"].([]any)[0].(map[string]any)["user_id"] != "carol" {
		t.Fatalf("page 2: %v", m)
	}
	for _, q := range []string{"page=0", "per_page=101", "per_page=0", "page=x"} {
		resp, body := ue.do("GET", "/api/admin/users?"+q, admin, nil)
		if resp.StatusCode != 422 {
			t.Errorf("%s: %d %s", q, resp.StatusCode, body)
		}
	}
	resp, body = ue.do("GET", "/api/admin/users/carol", admin, nil)
	ue.expect(resp, body, 200)
	if m = ue.json(body); m["has_profile"] != false || m["document_count"] != float64(1) ||
		m["statistics"].(map[string]any)["bytes_stored"] == float64(0) {
		t.Fatalf("carol detail: %v", m)
	}

	// Payment issue: 1 to 2048 characters.
	for _, issue := range []any{"", "   ", strings.Repeat("é", 2049), nil, 5} {
		resp, body := ue.do("POST", "/api/admin/users/bob@example.com/payment-issue", admin, map[string]any{"issue": issue})
		if resp.StatusCode != 422 {
			t.Errorf("issue %v: %d %s", issue, resp.StatusCode, body)
		}
	}
	resp, body = ue.do("POST", "/api/admin/users/bob@example.com/payment-issue", admin, map[string]any{"issue": strings.Repeat("é", 2048)})
	ue.expect(resp, body, 200)
	if m = ue.json(body); m["acknowledged"] != true || m["user_id"] != "bob@example.com" || m["profile"].(map[string]any)["display_name"] != "Bob" {
		t.Fatalf("payment issue: %v", m)
	}
	if n := ue.count(`SELECT count(*) FROM outbox WHERE topic=$1 AND key='user:bob@example.com'`, streams.TopicEvents); n != 3 {
		t.Fatalf("%d user events after the payment issue", n)
	}

	// DELETE keeps the documents.
	resp, body = ue.do("DELETE", "/api/admin/users/bob@example.com", admin, nil)
	ue.expect(resp, body, 204)
	resp, body = ue.do("DELETE", "/api/admin/users/bob@example.com", admin, nil)
	ue.expect(resp, body, 404)
	if n := ue.count(`SELECT count(*) FROM files WHERE owner_id='bob@example.com'`); n != 1 {
		t.Fatalf("bob's documents: %d", n)
	}

	// Each admin action is in the audit log, by admin, newest first.
	resp, body = ue.do("GET", "/api/admin/audit-log?actor=admin", admin, nil)
	ue.expect(resp, body, 200)
	var log struct {
		Entries []docflow.AuditEntry `json:"entries"`
		Total   int                  `json:"total"`
	}
	decode(t, body, &log)
	var actions []string
	for _, e := range log.Entries {
		actions = append(actions, e.Action+" "+e.Target)
		if e.ClientIP == "" {
			t.Errorf("entry without client address: %+v", e)
		}
	}
	want := []string{"profile.delete user:bob@example.com", "profile.payment_issue user:bob@example.com",
		"profile.update user:bob@example.com", "profile.update user:bob@example.com"}
	if strings.Join(actions, "|") != strings.Join(want, "|") || log.Total != 4 {
		t.Fatalf("audit %v (total %d)", actions, log.Total)
	}
	if !strings.HasPrefix(log.Entries[3].Detail, "created; updated display_name, daily_upload_limit, notes, subscription_tier=professional") {
		t.Fatalf("create detail: %q", log.Entries[3].Detail)
	}
}

func TestAuditLogAPI(t *testing.T) {
	t.Parallel()
	ue := newUsersEnv(t, nil)
	admin, bob := ue.token("admin"), ue.token("bob")
	log := postgres.NewAuditLog(ue.DB)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		actor, action := "admin", docflow.AuditProfileUpdate
		if i%2 == 1 {
			actor, action = "ann", docflow.AuditLoginFailed
		}
		e := docflow.AuditEntry{At: base.Add(time.Duration(i) * time.Hour), Actor: actor, Action: action, Target: "user:u" + strconv.Itoa(i), ClientIP: "10.0.0.1"}
		if err := log.RecordAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	type page struct {
		Entries []docflow.AuditEntry `json:"entries"`
		Total   int                  `json:"total"`
		Page    int                  `json:"page"`
		PerPage int                  `json:"per_page"`
		Pages   int                  `json:"pages"`
	}
	get := func(q string) page {
		t.Helper()
		resp, body := ue.do("GET", "/api/admin/audit-log?"+q, admin, nil)
		ue.expect(resp, body, 200)
		var p page
		decode(t, body, &p)
		return p
	}
	targets := func(p page) string {
		var s []string
		for _, e := range p.Entries {
			s = append(s, strings.TrimPrefix(e.Target, "user:"))
		}
		return strings.Join(s, ",")
	}
	if p := get(""); p.Total != 6 || targets(p) != "u5,u4,u3,u2,u1,u0" || p.PerPage != 50 || p.Pages != 1 {
		t.Fatalf("all: %+v", p)
	}
	if p := get("actor=ann"); p.Total != 3 || targets(p) != "u5,u3,u1" {
		t.Fatalf("actor: %+v", p)
	}
	if p := get("action=profile.update&actor=admin"); p.Total != 3 || targets(p) != "u4,u2,u0" {
		t.Fatalf("action: %+v", p)
	}
	if p := get("from=2026-03-01T13:00:00Z&to=2026-03-01T15:00:00Z"); targets(p) != "u3,u2,u1" {
		t.Fatalf("from/to: %+v", p)
	}
	if p := get("from=2026-03-01T14:00:00%2B01:00"); targets(p) != "u5,u4,u3,u2,u1" {
		t.Fatalf("from with offset: %+v", p)
	}
	if p := get("to=2026-02-28"); p.Total != 0 || p.Entries == nil {
		t.Fatalf("to before: %+v", p)
	}
	if p := get("per_page=4&page=2"); p.Total != 6 || p.Pages != 2 || p.Page != 2 || targets(p) != "u1,u0" {
		t.Fatalf("page 2: %+v", p)
	}
	for _, q := range []string{"page=0", "page=x", "per_page=0", "per_page=201", "from=yesterday", "to=2026-13-01",
		"from=2026-03-02&to=2026-03-01"} {
		resp, body := ue.do("GET", "/api/admin/audit-log?"+q, admin, nil)
		if resp.StatusCode != 422 || !strings.Contains(string(body), "detail") {
			t.Errorf("%s: %d %s", q, resp.StatusCode, body)
		}
	}
	resp, body := ue.do("GET", "/api/admin/audit-log", bob, nil)
	ue.expect(resp, body, 403)
	resp, body = ue.do("GET", "/api/admin/audit-log", "", nil)
	ue.expect(resp, body, 401)
}

// TestBlockedUserCannotUpload: a profile blocked through the admin API
// refuses the user on every intake route with 403; unblocked, uploads
// work again and the daily limit still applies.
func TestBlockedUserCannotUpload(t *testing.T) {
	t.Parallel()
	ue := newUsersEnv(t, nil)
	admin, dan := ue.token("admin"), ue.token("dan")
	resp, body := ue.do("PUT", "/api/admin/users/dan", admin, map[string]any{"is_blocked": true})
	ue.expect(resp, body, 200)
	const detail = "Your account is blocked from uploading files"
	for _, path := range []string{"/api/upload", "/api/ui-upload", "/api/files/upload", "/api/files/ui-upload", "/api/automation/actions/upload"} {
		resp, m := ue.upload(path, dan, "d.pdf", pdf("dan-"+path))
		if resp.StatusCode != 403 || m["detail"] != detail {
			t.Errorf("%s: %d %v", path, resp.StatusCode, m)
		}
	}
	resp, body = ue.do("POST", "/api/process-url", dan, map[string]any{"url": "http://127.0.0.1:9/never-fetched.pdf"})
	if m := ue.json(body); resp.StatusCode != 403 || m["detail"] != detail {
		t.Errorf("process-url: %d %s", resp.StatusCode, body)
	}
	if n := ue.count(`SELECT count(*) FROM files WHERE owner_id='dan'`); n != 0 {
		t.Fatalf("blocked user has %d files", n)
	}
	resp, body = ue.do("PUT", "/api/admin/users/dan", admin, map[string]any{"is_blocked": false, "daily_upload_limit": 1})
	ue.expect(resp, body, 200)
	if resp, m := ue.upload("/api/upload", dan, "d.pdf", pdf("dan-ok")); resp.StatusCode != 201 {
		t.Fatalf("unblocked: %d %v", resp.StatusCode, m)
	}
	if resp, m := ue.upload("/api/upload", dan, "d.pdf", pdf("dan-2")); resp.StatusCode != 429 || m["detail"] != "Daily upload limit of 1 reached" {
		t.Fatalf("daily limit: %d %v", resp.StatusCode, m)
	}
}

func TestUsersSearchAndMentionable(t *testing.T) {
	t.Parallel()
	ue := newUsersEnv(t, nil)
	admin, amy := ue.token("admin"), ue.token("amy@example.com")
	for id, body := range map[string]map[string]any{
		"amy@example.com": {"display_name": "Amy"}, "zoe@example.com": {"display_name": "Zoe"},
		"bert@example.com": {"display_name": "Bert", "is_blocked": true}, "carl": {},
	} {
		resp, b := ue.do("PUT", "/api/admin/users/"+id, admin, body)
		ue.expect(resp, b, 200)
	}
	search := func(q string) (int, []string) {
		t.Helper()
		resp, body := ue.do("GET", "/api/users/search?"+q, amy, nil)
		var out struct {
			Users []string `json:"users"`
		}
		if resp.StatusCode == 200 {
			decode(t, body, &out)
		}
		return resp.StatusCode, out.Users
	}
	if st, u := search("q=EXAMPLE"); st != 200 || strings.Join(u, ",") != "amy@example.com,bert@example.com,zoe@example.com" {
		t.Fatalf("search: %d %v", st, u)
	}
	if st, u := search("q=example&limit=1"); st != 200 || len(u) != 1 {
		t.Fatalf("limit 1: %d %v", st, u)
	}
	if st, u := search("q=nobody"); st != 200 || u == nil || len(u) != 0 {
		t.Fatalf("none: %d %v", st, u)
	}
	for _, q := range []string{"limit=0", "limit=21", "limit=x"} {
		if st, _ := search("q=a&" + q); st != 422 {
			t.Errorf("%s: %d", q, st)
		}
	}
	if st, u := search("q=a&limit=20"); st != 200 || len(u) != 4 {
		t.Fatalf("limit 20: %d %v", st, u)
	}
	resp, body := ue.do("GET", "/api/users/mentionable", amy, nil)
	ue.expect(resp, body, 200)
	var m []docflow.Mentionable
	decode(t, body, &m)
	var ids []string
	for _, x := range m {
		ids = append(ids, x.UserID)
	}
	if strings.Join(ids, ",") != "amy@example.com,carl,zoe@example.com" {
		t.Fatalf("mentionable: %s", body)
	}
	resp, body = ue.do("GET", "/api/users/mentionable", "", nil)
	ue.expect(resp, body, 401)
}
