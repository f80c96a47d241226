package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"strings"
	"testing"

	"docflow/integrations/dropbox/dropboxtest"
	"docflow/integrations/googledrive/drivetest"
	"docflow/integrations/onedrive/onedrivetest"
	"docflow/integrations/paperless/paperlesstest"
	"docflow/internal/app/apptest"
)

// TestBuiltAPICloudDestinations: on the API as `docflow api` builds it,
// with the cloud APIs' URLs pointed at in-process servers by the
// settings, testing each cloud and Paperless destination writes and
// removes a probe (Paperless: checks the token's rights) and says why it
// failed in the provider's own terms; the folder browser lists folders.
func TestBuiltAPICloudDestinations(t *testing.T) {
	t.Parallel()
	dbx, od, gd, pl := dropboxtest.New(t), onedrivetest.New(t), drivetest.New(t), paperlesstest.New(t)
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"DROPBOX_API_URL": dbx.URL, "DROPBOX_CONTENT_URL": dbx.URL,
		"ONEDRIVE_API_URL": od.APIURL(), "ONEDRIVE_LOGIN_URL": od.URL,
		"GOOGLE_DRIVE_API_URL": gd.URL, "GOOGLE_OAUTH_TOKEN_URL": gd.TokenURL(),
		"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1",
	}})
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := nethttp.Post(a.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}
	folder := gd.Mkdir("root", "Scans")
	for _, tc := range []struct{ name, body, refused, reason string }{
		{"dropbox", `{"integration_type": "DROPBOX", "config": {"path": "/Scans"}, "credentials": {"refresh_token": "` + dropboxtest.RefreshToken +
			`", "app_key": "` + dropboxtest.AppKey + `", "app_secret": "` + dropboxtest.AppSecret + `"}}`, `"app_secret": "`, "invalid_client"},
		{"onedrive", `{"integration_type": "ONEDRIVE", "config": {"path": "/Scans"}, "credentials": {"refresh_token": "` + onedrivetest.RefreshToken +
			`", "client_id": "` + onedrivetest.ClientID + `", "client_secret": "` + onedrivetest.ClientSecret + `"}}`, `"client_secret": "`, "invalid_client"},
		{"google drive", `{"integration_type": "GOOGLE_DRIVE", "config": {"folder_id": "` + folder + `"}, "credentials": {"refresh_token": "` + drivetest.RefreshToken +
			`", "client_id": "` + drivetest.ClientID + `", "client_secret": "` + drivetest.ClientSecret + `"}}`, `"client_secret": "`, "invalid_client"},
		{"paperless", `{"integration_type": "PAPERLESS", "config": {"url": "` + pl.URL + `"}, "credentials": {"token": "` + paperlesstest.Token + `"}}`,
			`"token": "`, "HTTP 401"},
	} {
		status, m := post("/api/integrations/test", tc.body)
		if status != 200 || m["success"] != true {
			t.Fatalf("%s: %d %v", tc.name, status, m)
		}
		// Paperless keeps every document it consumes: its test writes
		// nothing and says what it checked instead.
		if msg, _ := m["message"].(string); tc.name == "paperless" && (!strings.HasSuffix(msg, "the token may add documents") || strings.Contains(msg, "test file")) {
			t.Fatalf("paperless test message %q", msg)
		}
		i := strings.Index(tc.body, tc.refused) + len(tc.refused)
		wrong := tc.body[:i] + "wrong" + tc.body[i:]
		status, m = post("/api/integrations/test", wrong)
		if msg, _ := m["message"].(string); status != 200 || m["success"] != false || !strings.Contains(msg, tc.reason) {
			t.Fatalf("%s with wrong credentials: %d %v", tc.name, status, m)
		}
	}
	if p := dbx.Names("/Scans"); len(p) != 0 {
		t.Fatalf("probe left %v", p)
	}
	dbx.MkdirAll("/Scans/2026")
	if _, m := post("/api/integrations/test", `{"integration_type": "DROPBOX", "credentials": {"refresh_token": "`+dropboxtest.RefreshToken+
		`", "app_key": "`+dropboxtest.AppKey+`", "app_secret": "`+dropboxtest.AppSecret+`"}}`); m["success"] != true {
		t.Fatalf("dropbox root: %v", m)
	}
	resp, err := nethttp.PostForm(a.URL+"/api/dropbox/list-folders", map[string][]string{"access_token": {"sl.test-1"}, "path": {"/Scans"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"path":"/Scans/2026"`) {
		t.Fatalf("list folders: %d %s", resp.StatusCode, b)
	}
}
