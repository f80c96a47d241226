package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"docflow/integrations/dropbox/dropboxtest"
	"docflow/internal/app/apptest"
)

// TestBuiltSendToDropbox: on a serve process, POST /send_to_dropbox/
// names an uploaded document by the stored file name the upload answered
// with, and the delivery engine delivers it to the caller's Dropbox
// destination through the Dropbox client the settings point at an
// in-process Dropbox; the file record lists the delivery.
func TestBuiltSendToDropbox(t *testing.T) {
	dbx := dropboxtest.New(t)
	a := apptest.New(t, apptest.Options{Env: map[string]string{"DROPBOX_API_URL": dbx.URL, "DROPBOX_CONTENT_URL": dbx.URL}})
	do := func(method, path, ctype string, body io.Reader) (int, map[string]any) {
		t.Helper()
		req, _ := nethttp.NewRequest(method, a.URL+path, body)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return resp.StatusCode, m
	}

	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "note.txt")
	io.WriteString(w, "a note for Dropbox\n") //nolint:errcheck
	mw.Close()
	status, up := do("POST", "/api/ui-upload", mw.FormDataContentType(), &buf)
	stored, _ := up["stored_filename"].(string)
	if status != 200 || stored == "" {
		t.Fatalf("upload: %d %v", status, up)
	}
	status, m := do("POST", "/send_to_dropbox/", "application/x-www-form-urlencoded", strings.NewReader(url.Values{"file_path": {stored}}.Encode()))
	if status != 400 {
		t.Fatalf("send without a destination: %d %v", status, m)
	}
	status, in := do("POST", "/api/integrations/", "application/json", strings.NewReader(`{"direction": "DESTINATION", "integration_type": "DROPBOX",
		"name": "Dropbox", "config": {"path": "/Scans"}, "credentials": {"refresh_token": "`+dropboxtest.RefreshToken+`",
		"app_key": "`+dropboxtest.AppKey+`", "app_secret": "`+dropboxtest.AppSecret+`"}}`))
	if status != 201 {
		t.Fatalf("create: %d %v", status, in)
	}
	status, m = do("POST", "/send_to_dropbox/", "application/x-www-form-urlencoded", strings.NewReader(url.Values{"file_path": {"/data/processed/" + stored}}.Encode()))
	fileID, _ := m["file_id"].(float64)
	if status != 200 || m["status"] != "queued" || m["task_id"] != fmt.Sprintf("send:%d:%d", int64(fileID), int64(in["id"].(float64))) {
		t.Fatalf("send: %d %v", status, m)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, rec := do("GET", fmt.Sprintf("/api/files/%d", int64(fileID)), "", nil)
		delivered := false
		if dests, ok := rec["destinations"].([]any); ok {
			for _, d := range dests {
				d := d.(map[string]any)
				if d["type"] == "DROPBOX" && d["status"] == "delivered" && strings.HasPrefix(d["remote_path"].(string), "/Scans/") {
					delivered = true
				}
			}
		}
		if delivered && len(dbx.Names("/Scans")) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered: record %v, Dropbox holds %v", rec["destinations"], dbx.Paths())
		}
		time.Sleep(200 * time.Millisecond)
	}
}
