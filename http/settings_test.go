package http

import (
	"context"
	"errors"
	"strings"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

// settingsEnv serves the settings API with authentication on: "admin" is
// the administrator, anyone else is not. Audit entries are recorded.
func settingsEnv(t *testing.T, env map[string]string) (*testEnv, string) {
	t.Helper()
	all := map[string]string{"AUTH_ENABLED": "true", "OPENAI_API_KEY": "sk-from-the-environment", "UPLOAD_RATE_LIMIT_WINDOW": "90"}
	for k, v := range env {
		all[k] = v
	}
	e := newTestEnv(t, all, func(e *testEnv) {
		e.Server.cfg.Audit = postgres.NewAuditLog(e.DB)
		e.Settings.EnvOnly("DATABASE_URL")
		e.Server.MountSettings(SettingsDeps{Store: e.Settings, Suggest: map[string]Suggester{
			"TESSERACT_LANGUAGE": func(context.Context) ([]string, error) { return []string{"deu", "eng", "fra"}, nil },
		}})
	})
	return e, e.token("admin")
}

func settingByKey(t *testing.T, list []any, key string) map[string]any {
	t.Helper()
	for _, it := range list {
		if m := it.(map[string]any); m["key"] == key {
			return m
		}
	}
	t.Fatalf("%s not listed", key)
	return nil
}

// The list, one key, set, delete: values with their source, sensitive
// values never shown, admins only, every change audited.
func TestSettingsAPI(t *testing.T) {
	t.Parallel()
	e, admin := settingsEnv(t, nil)

	resp, body := e.do("GET", "/api/settings/", e.token("bob"), nil)
	e.expect(resp, body, 403)
	resp, body = e.do("GET", "/api/settings/", "", nil)
	e.expect(resp, body, 401)

	resp, body = e.do("GET", "/api/settings/", admin, nil)
	e.expect(resp, body, 200)
	if strings.Contains(string(body), "sk-from-the-environment") {
		t.Fatal("the list shows a sensitive value")
	}
	m := e.json(body)
	list := m["settings"].([]any)
	if len(list) != len(docflow.Catalogue()) {
		t.Fatalf("%d settings listed, the catalogue has %d", len(list), len(docflow.Catalogue()))
	}
	key := settingByKey(t, list, "OPENAI_API_KEY")
	if key["value"] != "********" || key["source"] != "env" || key["sensitive"] != true {
		t.Fatalf("sensitive setting listed as %v", key)
	}
	win := settingByKey(t, list, "UPLOAD_RATE_LIMIT_WINDOW")
	if win["value"] != "90" || win["source"] != "env" || win["category"] != "Uploads" || win["type"] != "integer" {
		t.Fatalf("UPLOAD_RATE_LIMIT_WINDOW listed as %v", win)
	}
	if def := settingByKey(t, list, "STEP_TIMEOUT"); def["source"] != "default" || def["value"] != "600" {
		t.Fatalf("STEP_TIMEOUT listed as %v", def)
	}
	if d := settingByKey(t, list, "DEBUG"); d["restart_required"] != true {
		t.Fatalf("DEBUG needs a restart: %v", d)
	}
	if len(m["categories"].([]any)) == 0 {
		t.Fatal("no categories")
	}

	// One key, in either case.
	resp, body = e.do("GET", "/api/settings/upload_rate_limit_window", admin, nil)
	e.expect(resp, body, 200)
	if got := e.json(body); got["key"] != "UPLOAD_RATE_LIMIT_WINDOW" || got["value"] != "90" {
		t.Fatalf("one key: %v", got)
	}
	resp, body = e.do("GET", "/api/settings/NO_SUCH_SETTING", admin, nil)
	e.expect(resp, body, 404)

	// Set: the database value wins and is said to.
	resp, body = e.do("POST", "/api/settings/UPLOAD_RATE_LIMIT_WINDOW", admin, map[string]any{"key": "UPLOAD_RATE_LIMIT_WINDOW", "value": "120"})
	e.expect(resp, body, 200)
	if got := e.json(body); got["value"] != "120" || got["source"] != "db" || got["restart_required"] != false {
		t.Fatalf("set: %v", got)
	}
	if docflow.UploadRateLimitWindow.Get(e.Settings) != 120 {
		t.Fatal("the store does not have the value")
	}
	// A restart is said to be needed for DEBUG; a JSON boolean is taken.
	resp, body = e.do("POST", "/api/settings/DEBUG", admin, map[string]any{"value": true})
	e.expect(resp, body, 200)
	if got := e.json(body); got["restart_required"] != true || got["value"] != "true" {
		t.Fatalf("set DEBUG: %v", got)
	}
	// Sensitive: stored, masked in the answer.
	resp, body = e.do("POST", "/api/settings/OPENAI_API_KEY", admin, map[string]any{"value": "sk-from-the-api"})
	e.expect(resp, body, 200)
	if strings.Contains(string(body), "sk-from") || e.json(body)["value"] != "********" || e.Settings.Get("OPENAI_API_KEY") != "sk-from-the-api" {
		t.Fatalf("set a sensitive value: %s", body)
	}

	// Bad input: the wrong type, out of range, an unknown key, a key of
	// the environment only, a body for another key, no value.
	for _, c := range []struct {
		path   string
		body   any
		status int
		want   string
	}{
		{"/api/settings/UPLOAD_RATE_LIMIT_WINDOW", map[string]any{"value": "soon"}, 422, "must be an integer"},
		{"/api/settings/UPLOAD_RATE_LIMIT_WINDOW", map[string]any{"value": "0"}, 422, "at least 1"},
		{"/api/settings/AUTH_ENABLED", map[string]any{"value": "perhaps"}, 422, "true or false"},
		{"/api/settings/OCR_RENDERER", map[string]any{"value": "magic"}, 422, "must be one of"},
		{"/api/settings/NO_SUCH_SETTING", map[string]any{"value": "1"}, 404, "Unknown setting"},
		{"/api/settings/DATABASE_URL", map[string]any{"value": "postgres://x@h/db"}, 422, "environment"},
		{"/api/settings/STEP_TIMEOUT", map[string]any{"key": "OTHER", "value": "5"}, 422, "not the key of the path"},
		{"/api/settings/STEP_TIMEOUT", map[string]any{"key": "STEP_TIMEOUT"}, 422, "value is required"},
		{"/api/settings/STEP_TIMEOUT", map[string]any{"value": []string{"5"}}, 422, "must be a string"},
	} {
		resp, body := e.do("POST", c.path, admin, c.body)
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
			t.Errorf("POST %s %v: %d %s, want %d with %q", c.path, c.body, resp.StatusCode, body, c.status, c.want)
		}
	}
	if docflow.UploadRateLimitWindow.Get(e.Settings) != 120 {
		t.Fatal("a refused value changed the setting")
	}

	// Delete: back to the environment, then (nothing stored) unchanged.
	resp, body = e.do("DELETE", "/api/settings/UPLOAD_RATE_LIMIT_WINDOW", admin, nil)
	e.expect(resp, body, 200)
	if got := e.json(body); got["source"] != "env" || got["value"] != "90" {
		t.Fatalf("after delete: %v", got)
	}
	resp, body = e.do("DELETE", "/api/settings/STEP_TIMEOUT", admin, nil)
	e.expect(resp, body, 200)
	if got := e.json(body); got["source"] != "default" {
		t.Fatalf("delete of a default: %v", got)
	}
	resp, body = e.do("DELETE", "/api/settings/NO_SUCH_SETTING", admin, nil)
	e.expect(resp, body, 404)

	// Audited: the sets and the delete, the sensitive value hidden.
	entries, _, err := postgres.NewAuditLog(e.DB).ListAudit(context.Background(), docflow.AuditFilter{Page: 1, PerPage: 50})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, en := range entries {
		if strings.HasPrefix(en.Action, "setting.") {
			seen[en.Action+" "+en.Target] = en.Detail
			if en.Actor != "admin" {
				t.Errorf("audit entry by %q", en.Actor)
			}
		}
	}
	if seen["setting.update setting:UPLOAD_RATE_LIMIT_WINDOW"] != `value "120"` || seen["setting.update setting:OPENAI_API_KEY"] != "a hidden value" ||
		seen["setting.delete setting:UPLOAD_RATE_LIMIT_WINDOW"] == "" || len(seen) != 4 {
		t.Fatalf("audit entries: %v", seen)
	}
	for _, d := range seen {
		if strings.Contains(d, "sk-from") {
			t.Fatalf("the audit log shows a sensitive value: %v", seen)
		}
	}
}

// Bulk update: each key's outcome; empty values (and a sensitive
// setting's mask sent back) ignored, never clearing; good keys stored
// beside bad ones.
func TestSettingsBulkUpdate(t *testing.T) {
	t.Parallel()
	e, admin := settingsEnv(t, nil)
	if _, err := e.Settings.Set(context.Background(), "SMTP_HOST", "mail.example.com"); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("POST", "/api/settings/bulk-update", admin, []map[string]any{
		{"key": "UPLOAD_RATE_LIMIT_WINDOW", "value": "30"},
		{"key": "step_timeout", "value": 45},
		{"key": "SMTP_HOST", "value": ""},
		{"key": "OPENAI_API_KEY", "value": "********"},
		{"key": "STALLED_RUN_TIMEOUT", "value": "never"},
		{"key": "NO_SUCH_SETTING", "value": "1"},
		{"key": "DEBUG", "value": "true"},
	})
	e.expect(resp, body, 200)
	m := e.json(body)
	join := func(v any) string {
		var out []string
		for _, x := range v.([]any) {
			if s, ok := x.(string); ok {
				out = append(out, s)
			} else {
				out = append(out, x.(map[string]any)["key"].(string))
			}
		}
		return strings.Join(out, ",")
	}
	if got := join(m["updated"]); got != "DEBUG,UPLOAD_RATE_LIMIT_WINDOW,STEP_TIMEOUT" {
		t.Errorf("updated %s", got)
	}
	if got := join(m["errors"]); got != "NO_SUCH_SETTING,STALLED_RUN_TIMEOUT" {
		t.Errorf("errors %s (%s)", got, body)
	}
	if got := join(m["ignored"]); got != "SMTP_HOST,OPENAI_API_KEY" {
		t.Errorf("ignored %s", got)
	}
	if m["restart_required"] != true {
		t.Errorf("DEBUG needs a restart: %v", m["restart_required"])
	}
	for _, x := range m["errors"].([]any) {
		if x := x.(map[string]any); x["key"] == "STALLED_RUN_TIMEOUT" && !strings.Contains(x["detail"].(string), "integer") {
			t.Errorf("the error does not say why: %v", x)
		}
	}
	if e.Settings.Get("SMTP_HOST") != "mail.example.com" || e.Settings.Get("OPENAI_API_KEY") != "sk-from-the-environment" {
		t.Fatal("an empty or masked value cleared a setting")
	}
	if e.Settings.Get("STEP_TIMEOUT") != "45" || e.Settings.Get("UPLOAD_RATE_LIMIT_WINDOW") != "30" {
		t.Fatal("the good keys were not stored")
	}
	// Nothing usable: 422 with the same report; {"settings": [...]} too.
	resp, body = e.do("POST", "/api/settings/bulk-update", admin, map[string]any{"settings": []map[string]any{{"key": "STEP_TIMEOUT", "value": "-1"}}})
	e.expect(resp, body, 422)
	if got := join(e.json(body)["errors"]); got != "STEP_TIMEOUT" {
		t.Errorf("errors %s", got)
	}
	resp, body = e.do("POST", "/api/settings/bulk-update", admin, map[string]any{"key": "STEP_TIMEOUT"})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", "/api/settings/bulk-update", e.token("bob"), []map[string]any{{"key": "STEP_TIMEOUT", "value": "5"}})
	e.expect(resp, body, 403)
}

// The credentials overview says which secrets are configured and where,
// never their values; suggestions exist for the five keys the spec names.
func TestSettingsCredentialsAndSuggestions(t *testing.T) {
	t.Parallel()
	e, admin := settingsEnv(t, nil)
	if _, err := e.Settings.Set(context.Background(), "SMTP_PASSWORD", "mail secret"); err != nil {
		t.Fatal(err)
	}
	resp, body := e.do("GET", "/api/settings/credentials", admin, nil)
	e.expect(resp, body, 200)
	if strings.Contains(string(body), "mail secret") || strings.Contains(string(body), "sk-from") {
		t.Fatalf("the overview shows a secret: %s", body)
	}
	m := e.json(body)
	sources := map[string]any{}
	for _, c := range m["credentials"].([]any) {
		c := c.(map[string]any)
		sources[c["key"].(string)] = c["source"]
		if (c["source"] != nil) != (c["configured"] == true) {
			t.Errorf("%v: configured and source disagree", c)
		}
	}
	if sources["SMTP_PASSWORD"] != "db" || sources["OPENAI_API_KEY"] != "env" || sources["EMBEDDING_API_KEY"] != nil {
		t.Fatalf("sources %v", sources)
	}
	if m["configured_count"].(float64) < 2 || m["configured_count"].(float64)+m["unconfigured_count"].(float64) != m["total"].(float64) {
		t.Fatalf("counts: %v", m)
	}

	for _, c := range []struct{ path, want string }{
		{"/api/settings/aws_region/suggestions?q=eu-c", "eu-central-1"},
		{"/api/settings/azure_region/suggestions?q=westeu", "westeurope"},
		{"/api/settings/tesseract_language/suggestions?q=de", "deu"},
		{"/api/settings/easyocr_languages/suggestions?q=ch", "ch_sim"},
		{"/api/settings/embedding_model/suggestions?q=3-small", "text-embedding-3-small"},
	} {
		resp, body := e.do("GET", c.path, admin, nil)
		e.expect(resp, body, 200)
		if !strings.Contains(string(body), `"`+c.want+`"`) {
			t.Errorf("%s: %s", c.path, body)
		}
	}
	resp, body = e.do("GET", "/api/settings/aws_region/suggestions?limit=3", admin, nil)
	e.expect(resp, body, 200)
	if n := len(e.json(body)["suggestions"].([]any)); n != 3 {
		t.Errorf("limit 3 gave %d", n)
	}
	for path, status := range map[string]int{
		"/api/settings/aws_region/suggestions?limit=51": 422,
		"/api/settings/aws_region/suggestions?limit=x":  422,
		"/api/settings/step_timeout/suggestions":        404,
		"/api/settings/no_such/suggestions":             404,
	} {
		resp, body := e.do("GET", path, admin, nil)
		e.expect(resp, body, status)
	}
}

// A store that cannot write answers with an error, not a half report.
func TestSettingsBulkStoreFailure(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, func(e *testEnv) {
		e.Server.MountSettings(SettingsDeps{Store: failingSettings{SettingsStore: e.Settings}})
	})
	resp, body := e.do("POST", "/api/settings/bulk-update", e.token("admin"), []map[string]any{{"key": "STEP_TIMEOUT", "value": "5"}})
	e.expect(resp, body, 500)
}

type failingSettings struct{ *postgres.SettingsStore }

func (failingSettings) SetMany(context.Context, map[string]string) ([]*docflow.Setting, map[string]error, error) {
	return nil, nil, errors.New("database gone")
}
