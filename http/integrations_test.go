package http

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"docflow"
	"docflow/integrations/local"
	"docflow/storage/postgres"
)

// recordingTester remembers what it was asked to test.
type recordingTester struct {
	mu  sync.Mutex
	got []*docflow.Integration
}

func (r *recordingTester) TestIntegration(ctx context.Context, in *docflow.Integration) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, in)
	return in.Credentials["password"] == "right", "server said " + in.Credentials["password"]
}

type integrationsEnv struct {
	*testEnv
	imap  *recordingTester
	local string
}

func newIntegrationsEnv(t *testing.T, env map[string]string) *integrationsEnv {
	ie := &integrationsEnv{imap: &recordingTester{}, local: t.TempDir()}
	if env == nil {
		env = map[string]string{}
	}
	env["LOCAL_DESTINATION_DIR"] = ie.local
	ie.testEnv = newTestEnv(t, env, func(e *testEnv) {
		c, err := postgres.NewCipher(strings.Repeat("s", 40))
		if err != nil {
			t.Fatal(err)
		}
		e.Server.MountIntegrations(IntegrationsDeps{Store: postgres.NewIntegrationStore(e.DB, c), Testers: docflow.IntegrationTesters{
			docflow.IntegrationLocal: local.Tester{Root: func() string { return e.Settings.Get("LOCAL_DESTINATION_DIR") }},
			docflow.IntegrationIMAP:  ie.imap,
		}})
	})
	return ie
}

func (e *integrationsEnv) tier(user, tier string) {
	e.t.Helper()
	if _, err := e.DB.Pool.Exec(context.Background(), `INSERT INTO user_profiles (user_id, subscription_tier) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET subscription_tier = EXCLUDED.subscription_tier`, user, tier); err != nil {
		e.t.Fatal(err)
	}
}

func imapBody(name string) map[string]any {
	return map[string]any{"integration_type": "imap", "name": name,
		"config":      map[string]any{"host": "mail.example.com", "security": "starttls", "port": 143},
		"credentials": map[string]any{"username": "ann", "password": "s3cret-imap-pw"}}
}

func localBody(path string) map[string]any {
	return map[string]any{"integration_type": "local", "direction": "destination", "name": "folder " + path, "config": map[string]any{"path": path}}
}

// errorFields returns the fields a 422 body names.
func errorFields(e *testEnv, body []byte) []string {
	var out []string
	for _, f := range e.json(body)["errors"].([]any) {
		out = append(out, f.(map[string]any)["field"].(string))
	}
	return out
}

func TestIntegrationsCRUDScopedToTheUser(t *testing.T) {
	t.Parallel()
	e := newIntegrationsEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	ann, bob := e.token("ann"), e.token("bob")
	e.tier("ann", docflow.TierStarter)

	resp, body := e.do("POST", "/api/integrations/", ann, localBody("invoices"))
	e.expect(resp, body, 201)
	loc := e.json(body)
	cfg := loc["config"].(map[string]any)
	if loc["integration_type"] != "LOCAL" || loc["direction"] != "DESTINATION" || loc["owner_id"] != "ann" || loc["has_credentials"] != false ||
		loc["is_active"] != true || cfg["filename_template"] != "{original_filename}" || loc["last_error"] != nil ||
		loc["status"].(map[string]any)["state"] != "idle" {
		t.Fatalf("created %s", body)
	}
	resp, body = e.do("POST", "/api/integrations/", ann, imapBody("mailbox"))
	e.expect(resp, body, 201)
	imap := e.json(body)
	id := int64(imap["id"].(float64))
	if imap["has_credentials"] != true || imap["direction"] != "SOURCE" || imap["config"].(map[string]any)["poll_interval"] != float64(60) {
		t.Fatalf("created %s", body)
	}

	// Credentials never come back, and are sealed in the table.
	for _, path := range []string{"/api/integrations/", fmt.Sprintf("/api/integrations/%d", id)} {
		resp, body = e.do("GET", path, ann, nil)
		e.expect(resp, body, 200)
		if strings.Contains(string(body), "s3cret") || strings.Contains(string(body), `"credentials"`) {
			t.Fatalf("%s leaks credentials: %s", path, body)
		}
	}
	var sealed string
	if err := e.DB.Pool.QueryRow(context.Background(), `SELECT credentials FROM integrations WHERE id=$1`, id).Scan(&sealed); err != nil || sealed == "" || strings.Contains(sealed, "s3cret") {
		t.Fatalf("stored credentials %q %v", sealed, err)
	}

	// Filters.
	for q, want := range map[string]int{"": 2, "?direction=SOURCE": 1, "?direction=destination": 1, "?integration_type=local": 1, "?integration_type=S3": 0} {
		resp, body = e.do("GET", "/api/integrations/"+q, ann, nil)
		e.expect(resp, body, 200)
		var list []any
		if err := jsonUnmarshal(body, &list); err != nil || len(list) != want {
			t.Errorf("%q: %s", q, body)
		}
	}
	resp, body = e.do("GET", "/api/integrations/?direction=SIDEWAYS", ann, nil)
	e.expect(resp, body, 422)

	// Update any subset: config is merged, credentials kept unless given.
	path := fmt.Sprintf("/api/integrations/%d", id)
	resp, body = e.do("PUT", path, ann, map[string]any{"name": "renamed", "config": map[string]any{"poll_interval": 300}})
	e.expect(resp, body, 200)
	up := e.json(body)
	if up["name"] != "renamed" || up["config"].(map[string]any)["host"] != "mail.example.com" || up["config"].(map[string]any)["poll_interval"] != float64(300) || up["has_credentials"] != true {
		t.Fatalf("updated %s", body)
	}
	resp, body = e.do("PUT", path, ann, map[string]any{"config": map[string]any{"port": 70000}})
	e.expect(resp, body, 422)
	if f := errorFields(e.testEnv, body); !slices.Contains(f, "config.port") {
		t.Fatalf("fields %v", f)
	}
	resp, body = e.do("PUT", path, ann, map[string]any{"integration_type": "S3"})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", path, ann, map[string]any{"is_active": false})
	e.expect(resp, body, 200)
	if e.json(body)["is_active"] != false {
		t.Fatal(string(body))
	}

	// Another user's integration does not exist for bob.
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		resp, body = e.do(m, path, bob, map[string]any{"name": "mine"})
		e.expect(resp, body, 404)
	}
	resp, body = e.do("POST", "/api/integrations/test", bob, map[string]any{"integration_id": id})
	e.expect(resp, body, 404)
	resp, body = e.do("GET", "/api/integrations/", bob, nil)
	e.expect(resp, body, 200)
	if strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("bob lists %s", body)
	}

	resp, body = e.do("DELETE", path, ann, nil)
	e.expect(resp, body, 204)
	resp, body = e.do("GET", path, ann, nil)
	e.expect(resp, body, 404)
}

func TestIntegrationsValidationNamesTheField(t *testing.T) {
	t.Parallel()
	e := newIntegrationsEnv(t, nil)
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"integration_type": "IMAP", "name": "x", "config": map[string]any{"host": "h", "hots": "x"}, "credentials": map[string]any{"username": "u", "password": "p"}}, "config.hots"},
		{map[string]any{"integration_type": "IMAP", "name": "x", "config": map[string]any{"host": "h", "port": 0}, "credentials": map[string]any{"username": "u", "password": "p"}}, "config.port"},
		{map[string]any{"integration_type": "IMAP", "name": "x", "config": map[string]any{"host": "h"}}, "credentials.password"},
		{map[string]any{"integration_type": "IMAP", "name": "x", "config": map[string]any{}, "credentials": map[string]any{"username": "u", "password": "p"}}, "config.host"},
		{map[string]any{"integration_type": "IMAP", "direction": "DESTINATION", "name": "x", "config": map[string]any{"host": "h"}, "credentials": map[string]any{"username": "u", "password": "p"}}, "direction"},
		{map[string]any{"integration_type": "TELEGRAPH", "name": "x"}, "integration_type"},
		{map[string]any{"integration_type": "LOCAL", "config": map[string]any{"path": "x"}}, "name"},
		{map[string]any{"integration_type": "LOCAL", "name": "x", "config": "path=x"}, "config"},
		{map[string]any{"integration_type": "WEBDAV", "name": "x", "config": map[string]any{"url": "file:///etc"}}, "config.url"},
	} {
		resp, body := e.do("POST", "/api/integrations/", "", tc.body)
		e.expect(resp, body, 422)
		if f := errorFields(e.testEnv, body); !slices.Contains(f, tc.field) {
			t.Errorf("%v: fields %v, want %s (%s)", tc.body, f, tc.field, body)
		}
		resp, body = e.do("POST", "/api/integrations/test", "", tc.body)
		if tc.field != "name" {
			e.expect(resp, body, 422)
		}
	}
}

func TestIntegrationsQuotaByTier(t *testing.T) {
	t.Parallel()
	e := newIntegrationsEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	ann, admin := e.token("ann"), e.token("admin")

	quota := func(tok string) map[string]any {
		resp, body := e.do("GET", "/api/integrations/quota/", tok, nil)
		e.expect(resp, body, 200)
		return e.json(body)
	}
	q := quota(ann)
	if q["tier_id"] != "free" || q["tier_name"] != "Free" || fmt.Sprint(q["destinations"]) != "map[can_add:true current_count:0 max_allowed:1]" ||
		fmt.Sprint(q["sources"]) != "map[can_add:false current_count:0 max_allowed:0]" {
		t.Fatalf("free quota %v", q)
	}
	resp, body := e.do("POST", "/api/integrations/", ann, imapBody("mail"))
	e.expect(resp, body, 403)
	if !strings.HasPrefix(e.json(body)["detail"].(string), "plan limit reached") {
		t.Fatal(string(body))
	}
	resp, body = e.do("POST", "/api/integrations/", ann, localBody("a"))
	e.expect(resp, body, 201)
	resp, body = e.do("POST", "/api/integrations/", ann, localBody("b"))
	e.expect(resp, body, 403)
	if e.json(body)["detail"] != "plan limit reached, remove a destination or upgrade" {
		t.Fatal(string(body))
	}
	// An inactive one is stored, but re-activating it exceeds the quota.
	inactive := localBody("c")
	inactive["is_active"] = false
	resp, body = e.do("POST", "/api/integrations/", ann, inactive)
	e.expect(resp, body, 201)
	resp, body = e.do("PUT", fmt.Sprintf("/api/integrations/%d", int64(e.json(body)["id"].(float64))), ann, map[string]any{"is_active": true})
	e.expect(resp, body, 403)
	if q := quota(ann); fmt.Sprint(q["destinations"]) != "map[can_add:false current_count:1 max_allowed:1]" {
		t.Fatalf("after: %v", q)
	}

	// Concurrent creates stop exactly at the tier's limit.
	e.tier("ann", docflow.TierProfessional)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _ := e.do("POST", "/api/integrations/", ann, imapBody(fmt.Sprint("mail ", i)))
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[201] != 3 || codes[403] != 7 {
		t.Fatalf("professional sources: %v", codes)
	}
	e.tier("ann", docflow.TierPower)
	if q := quota(ann); q["tier_id"] != "power" || fmt.Sprint(q["sources"]) != "map[can_add:true current_count:3 max_allowed:<nil>]" {
		t.Fatalf("power: %v", q)
	}

	// Administrators have no quota (free tier, no profile).
	for i := 0; i < 3; i++ {
		resp, body = e.do("POST", "/api/integrations/", admin, imapBody("admin mail"))
		e.expect(resp, body, 201)
	}
	if q := quota(admin); fmt.Sprint(q["sources"]) != "map[can_add:true current_count:3 max_allowed:<nil>]" {
		t.Fatalf("admin: %v", q)
	}
}

func TestIntegrationsSingleUserHasNoQuota(t *testing.T) {
	t.Parallel()
	e := newIntegrationsEnv(t, nil)
	for i := 0; i < 3; i++ {
		resp, body := e.do("POST", "/api/integrations/", "", localBody(fmt.Sprint("d", i)))
		e.expect(resp, body, 201)
		if e.json(body)["owner_id"] != "admin" {
			t.Fatalf("single-user owner: %s", body)
		}
		resp, body = e.do("POST", "/api/integrations/", "", imapBody("mail"))
		e.expect(resp, body, 201)
	}
}

func TestIntegrationsTestEndpoint(t *testing.T) {
	t.Parallel()
	e := newIntegrationsEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	ann := e.token("ann")
	e.tier("ann", docflow.TierStarter)
	test := func(body any) map[string]any {
		resp, b := e.do("POST", "/api/integrations/test", ann, body)
		e.expect(resp, b, 200)
		return e.json(b)
	}
	// LOCAL: a folder inside the user's own folder is created and written.
	if r := test(localBody("scans/2026")); r["success"] != true || r["message"] != "Connected to folder ann/scans/2026, and wrote and removed a test file" {
		t.Fatalf("local ok: %v", r)
	}
	if st, err := os.Stat(filepath.Join(e.local, "ann", "scans", "2026")); err != nil || !st.IsDir() {
		t.Fatal("folder not made", err)
	}
	if err := os.WriteFile(filepath.Join(e.local, "ann", "taken"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := test(localBody("taken"))
	if r["success"] != false || strings.Contains(r["message"].(string), e.local) {
		t.Fatalf("local blocked: %v", r)
	}
	e.SetEnv("LOCAL_DESTINATION_DIR", "")
	if r := test(localBody("x")); r["success"] != false || !strings.Contains(r["message"].(string), "LOCAL_DESTINATION_DIR is not set") {
		t.Fatalf("local unset: %v", r)
	}
	// A type without a tester.
	s3 := map[string]any{"integration_type": "s3", "config": map[string]any{"bucket": "b"}, "credentials": map[string]any{"access_key_id": "a", "secret_access_key": "s"}}
	if r := test(s3); r["success"] != false || r["message"] != "testing S3 is not supported yet" {
		t.Fatalf("s3: %v", r)
	}
	// A stored integration is tested with its stored credentials, or with
	// the body's changes applied unsaved.
	resp, body := e.do("POST", "/api/integrations/", ann, imapBody("mail"))
	e.expect(resp, body, 201)
	id := e.json(body)["id"]
	if r := test(map[string]any{"integration_id": id}); r["success"] != false || r["message"] != "server said s3cret-imap-pw" {
		t.Fatalf("stored: %v", r)
	}
	if r := test(map[string]any{"integration_id": id, "credentials": map[string]any{"username": "ann", "password": "right"}, "config": map[string]any{"port": 1143}}); r["success"] != true {
		t.Fatalf("changed: %v", r)
	}
	last := e.imap.got[len(e.imap.got)-1]
	if last.Config["port"] != int64(1143) || last.Config["host"] != "mail.example.com" || last.OwnerID != "ann" {
		t.Fatalf("tested %+v", last)
	}
	if r := test(map[string]any{"integration_id": id}); r["message"] != "server said s3cret-imap-pw" {
		t.Fatalf("the test saved its changes: %v", r)
	}
}
