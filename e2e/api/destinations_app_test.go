package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow/e2e/e2etest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/internal/testsupport/davserver"
	"docflow/internal/testsupport/testbin"
)

// TestBuiltAPIDestinations: on the whole service, a user tests a WebDAV
// destination (and sees the server's reason when it fails), configures
// it, uploads a document whose pipeline sends it to its destinations,
// and finds it delivered (the file's record, the storage_provider
// filter, the integration's status); send-to delivers it again, over the
// first copy.
func TestBuiltAPIDestinations(t *testing.T) {
	dav := davserver.Rclone(t, davserver.Options{User: "u", Pass: "p"})
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "INTEGRATION_ALLOWED_HOSTS": "127.0.0.1"}})
	a.LocalUser(t, "ann@example.com", false)
	token := a.Token(t, "ann@example.com")
	phone := &e2etest.Phone{T: t, Base: a.URL, Token: token}
	call := phone.Call
	webdav := func(pass string) map[string]any {
		return map[string]any{"integration_type": "webdav", "name": "Share",
			"config":      map[string]any{"url": dav.URL, "path": "/docflow/in", "filename_template": "{id} {original_filename}"},
			"credentials": map[string]any{"username": "u", "password": pass}}
	}

	// Testing: the probe goes through; a refusal says the server's reason;
	// an unreachable or private server says so; never a 500.
	if st, m, raw := call("POST", "/api/integrations/test", webdav("p")); st != 200 || m["success"] != true ||
		!strings.Contains(m["message"].(string), "wrote and removed a test file") {
		t.Fatalf("test: %d %s", st, raw)
	}
	if st, m, raw := call("POST", "/api/integrations/test", webdav("wrong")); st != 200 || m["success"] != false ||
		!strings.Contains(m["message"].(string), "401") {
		t.Fatalf("test, wrong password: %d %s", st, raw)
	}
	closed, _ := testbin.FreePort()
	s3 := func(endpoint string) map[string]any {
		return map[string]any{"integration_type": "S3", "config": map[string]any{"endpoint": endpoint, "bucket": "b", "path_style": true},
			"credentials": map[string]any{"access_key_id": "k", "secret_access_key": "s"}}
	}
	if st, m, raw := call("POST", "/api/integrations/test", s3("http://127.0.0.1:"+strconv.Itoa(closed))); st != 200 || m["success"] != false ||
		!strings.Contains(m["message"].(string), "could not connect") {
		t.Fatalf("test, unreachable: %d %s", st, raw)
	}
	if st, m, raw := call("POST", "/api/integrations/test", s3("http://10.255.255.1:9000")); st != 200 || m["success"] != false ||
		!strings.Contains(m["message"].(string), "access to private or internal addresses is not allowed") {
		t.Fatalf("test, private address: %d %s", st, raw)
	}

	st, in, raw := call("POST", "/api/integrations/", webdav("p"))
	if st != 201 {
		t.Fatalf("create: %d %s", st, raw)
	}
	integrationID := int64(in["id"].(float64))
	if st, _, raw := call("POST", "/api/pipelines", map[string]any{"name": "deliver", "is_default": true,
		"steps": []map[string]any{{"step_type": "send_to_destinations"}}}); st != 201 && st != 200 {
		t.Fatalf("pipeline: %d %s", st, raw)
	}
	st, up, raw := call("POST", "/api/upload", e2etest.NewMultipart(t, "notes.txt", "the notes"))
	if st != 201 && st != 200 {
		t.Fatalf("upload: %d %s", st, raw)
	}
	var fileID int64
	testsupport.WaitFor(t, 2*time.Minute, "the file recorded", func() bool {
		_, list, _ := call("GET", "/api/files", nil)
		files, _ := list["files"].([]any)
		if len(files) == 1 {
			fileID = int64(files[0].(map[string]any)["id"].(float64))
		}
		return fileID != 0
	})
	_ = up
	var dest map[string]any
	testsupport.WaitFor(t, 2*time.Minute, "the delivery", func() bool {
		_, m, _ := call("GET", fmt.Sprintf("/api/files/%d", fileID), nil)
		ds, _ := m["destinations"].([]any)
		if len(ds) == 1 {
			dest = ds[0].(map[string]any)
		}
		return dest != nil && dest["status"] == "delivered"
	})
	name := fmt.Sprintf("%d notes.txt", fileID)
	if dest["type"] != "WEBDAV" || int64(dest["integration_id"].(float64)) != integrationID ||
		dest["remote_path"] != "/docflow/in/"+name || dest["delivered_at"] == nil || dest["error"] != nil {
		t.Fatalf("destination %v", dest)
	}
	if b, err := os.ReadFile(filepath.Join(dav.Dir, "docflow", "in", name)); err != nil || string(b) != "the notes" {
		t.Fatalf("the share holds %q %v", b, err)
	}
	if _, m, raw := call("GET", "/api/files?storage_provider=webdav", nil); len(m["files"].([]any)) != 1 {
		t.Fatalf("storage_provider webdav: %s", raw)
	}
	if _, m, raw := call("GET", "/api/files?storage_provider=s3", nil); len(m["files"].([]any)) != 0 {
		t.Fatalf("storage_provider s3: %s", raw)
	}

	// Send-to: queued, delivered again over the first copy.
	if err := os.WriteFile(filepath.Join(dav.Dir, "docflow", "in", name), []byte("changed there"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, m, raw := call("POST", fmt.Sprintf("/api/files/%d/send-to/%d", fileID, integrationID), nil)
	if st != 202 || m["status"] != "queued" {
		t.Fatalf("send-to: %d %s", st, raw)
	}
	testsupport.WaitFor(t, 2*time.Minute, "the second delivery", func() bool {
		b, _ := os.ReadFile(filepath.Join(dav.Dir, "docflow", "in", name))
		return string(b) == "the notes"
	})
	if entries, _ := os.ReadDir(filepath.Join(dav.Dir, "docflow", "in")); len(entries) != 1 {
		t.Fatalf("the share holds %d files", len(entries))
	}
	if st, _, raw := call("POST", fmt.Sprintf("/api/files/%d/send-to/%d", fileID, integrationID+1000), nil); st != 404 {
		t.Fatalf("send-to an unknown integration: %d %s", st, raw)
	}
	testsupport.WaitFor(t, 2*time.Minute, "the integration's status", func() bool {
		_, m, _ := call("GET", fmt.Sprintf("/api/integrations/%d", integrationID), nil)
		status, _ := m["status"].(map[string]any)
		return status != nil && status["deliveries_ok"] == float64(2)
	})
}
