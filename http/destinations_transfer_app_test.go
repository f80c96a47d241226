package http_test

import (
	"bytes"
	"encoding/json"
	"io"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport/mailpit"
	"docflow/internal/testsupport/sshd"
	"docflow/internal/testsupport/vsftpd"
)

// TestBuiltAPITestsTransferDestinations: on the API as `docflow api`
// builds it, POST /api/integrations/test reaches real SFTP, FTP and SMTP
// servers through the clients internal/app registers, and answers a
// refusal (a changed host key) with success false and its reason.
func TestBuiltAPITestsTransferDestinations(t *testing.T) {
	ssh := sshd.Start(t)
	ftp := vsftpd.Start(t, vsftpd.Options{TLS: true})
	mp := mailpit.Start(t)
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1",
		"SMTP_HOST":                 mp.SMTPHost, "SMTP_PORT": strconv.Itoa(mp.SMTPPort), "SMTP_FROM": "docflow@example.com",
	}})
	test := func(body map[string]any) map[string]any {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := nethttp.Post(a.URL+"/api/integrations/test", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(out, &m) != nil {
			t.Fatalf("test: %d %s", resp.StatusCode, out)
		}
		return m
	}
	sftp := map[string]any{"integration_type": "SFTP",
		"config": map[string]any{"host": ssh.Host, "port": ssh.Port, "path": "/upload/scans",
			"host_key_fingerprint": ssh.Fingerprint()},
		"credentials": map[string]any{"username": ssh.User.Name, "password": ssh.User.Password}}
	want := "Connected to sftp://" + ssh.Addr() + "/upload/scans, and wrote and removed a test file"
	if r := test(sftp); r["success"] != true || r["message"] != want {
		t.Fatalf("sftp: %v", r)
	}
	sftp["config"].(map[string]any)["host_key_fingerprint"] = "SHA256:" + strings.Repeat("A", 43)
	if r := test(sftp); r["success"] != false || !strings.Contains(r["message"].(string), "does not match config.host_key_fingerprint (it showed "+ssh.Fingerprint()) {
		t.Fatalf("sftp, another key pinned: %v", r)
	}
	ftpBody := map[string]any{"integration_type": "FTP",
		"config":      map[string]any{"host": ftp.Host, "port": ftp.Port, "path": "/upload", "ca_certificate": string(ftp.CA)},
		"credentials": map[string]any{"username": ftp.User.Name, "password": ftp.User.Password}}
	if r := test(ftpBody); r["success"] != true {
		t.Fatalf("ftp: %v", r)
	}
	ftpBody["credentials"].(map[string]any)["password"] = "wrong"
	if r := test(ftpBody); r["success"] != false || !strings.Contains(r["message"].(string), "530 Login incorrect.") {
		t.Fatalf("ftp, wrong password: %v", r)
	}
	// E-mail through the SMTP settings, and through a server of its own.
	if r := test(map[string]any{"integration_type": "EMAIL", "config": map[string]any{"to": "ann@example.com"}}); r["success"] != true {
		t.Fatalf("email: %v", r)
	}
	own := map[string]any{"integration_type": "EMAIL", "config": map[string]any{"to": "ann@example.com"},
		"credentials": map[string]any{"smtp_host": mp.SMTPHost, "smtp_port": strconv.Itoa(mp.SMTPPort), "smtp_username": "me@example.com", "smtp_password": "x"}}
	if r := test(own); r["success"] != true {
		t.Fatalf("email, own server: %v", r)
	}
	if msgs, _ := mp.Messages(); len(msgs) != 0 {
		t.Fatalf("testing sent %d mails", len(msgs))
	}
}
