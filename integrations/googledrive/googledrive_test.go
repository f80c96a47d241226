package googledrive_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/googledrive"
	"docflow/integrations/googledrive/drivetest"
	"docflow/internal/netguard"
)

func options(srv *drivetest.Server) googledrive.Options {
	return googledrive.Options{
		HTTP:   netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}, Timeout: 10 * time.Second}),
		APIURL: srv.URL, TokenURL: srv.TokenURL(), ChunkSize: googledrive.ChunkUnit,
	}
}

func testClient(t *testing.T, srv *drivetest.Server, folder string) *googledrive.Client {
	t.Helper()
	c, err := googledrive.New(googledrive.Config{FolderID: folder, RefreshToken: drivetest.RefreshToken,
		ClientID: drivetest.ClientID, ClientSecret: drivetest.ClientSecret}, options(srv))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func deliver(t *testing.T, c *googledrive.Client, name string, data []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Deliver(ctx, docflow.DestinationDoc{FileID: 1, Name: name, MimeType: "application/pdf", Size: int64(len(data))}, bytes.NewReader(data))
}

func class(t *testing.T, err error, want docflow.DestinationFailure) *docflow.DestinationError {
	t.Helper()
	var de *docflow.DestinationError
	if !errors.As(err, &de) || de.Class != want {
		t.Fatalf("error %v: want class %s", err, want)
	}
	return de
}

// A document becomes a file in the folder; delivered again, small or
// large, it becomes a new version of that file, never a second one.
func TestDeliverAndOverwrite(t *testing.T) {
	srv := drivetest.New(t)
	folder := srv.Mkdir("root", "Scans")
	c := testClient(t, srv, folder)
	id, err := deliver(t, c, "Invoice O'Brien.pdf", []byte("first"))
	if err != nil || id == "" {
		t.Fatalf("deliver: %q %v", id, err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (3*googledrive.ChunkUnit+5)/16+1)
	for _, data := range [][]byte{[]byte("second"), big} {
		again, err := deliver(t, c, "Invoice O'Brien.pdf", data)
		if err != nil || again != id {
			t.Fatalf("again: %q (first %q) %v", again, id, err)
		}
		files := srv.Files(folder)
		if len(files) != 1 || !bytes.Equal(files[0].Data, data) || files[0].Name != "Invoice O'Brien.pdf" || files[0].MimeType != "application/pdf" {
			t.Fatalf("files: %d, first %+v", len(files), files[0].Name)
		}
	}
	if _, err := deliver(t, c, "other.pdf", []byte("x")); err != nil || len(srv.Files(folder)) != 2 {
		t.Fatalf("second name: %v, %d files", err, len(srv.Files(folder)))
	}
}

// Above one chunk a new file goes through a resumable upload, chunk by
// chunk.
func TestDeliverLarge(t *testing.T) {
	for _, size := range []int{3*googledrive.ChunkUnit + 7, 2 * googledrive.ChunkUnit, googledrive.ChunkUnit} {
		srv := drivetest.New(t)
		c := testClient(t, srv, "")
		data := bytes.Repeat([]byte("abcdefghijklmnop"), size/16+1)[:size]
		if _, err := deliver(t, c, "big.pdf", data); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		files := srv.Files("root")
		if len(files) != 1 || !bytes.Equal(files[0].Data, data) {
			t.Fatalf("size %d: stored %d files", size, len(files))
		}
		want := (size + googledrive.ChunkUnit - 1) / googledrive.ChunkUnit
		if size == googledrive.ChunkUnit {
			want = 0
		}
		if srv.Calls("chunk") != want || srv.Sessions() != 0 {
			t.Fatalf("size %d: chunks %d, open sessions %d", size, srv.Calls("chunk"), srv.Sessions())
		}
	}
}

// A body shorter or longer than announced is not committed.
func TestDeliverWrongSize(t *testing.T) {
	srv := drivetest.New(t)
	c := testClient(t, srv, "root")
	body := make([]byte, 2*googledrive.ChunkUnit+5)
	for _, size := range []int64{3 * googledrive.ChunkUnit, googledrive.ChunkUnit + 1, 4} {
		_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: size}, bytes.NewReader(body))
		if err == nil || len(srv.Files("root")) != 0 {
			t.Fatalf("size %d: %v, %d files", size, err, len(srv.Files("root")))
		}
	}
}

// An expired access token is refreshed once and the call sent again,
// chunks of a resumable upload included; a second 401 is an
// authentication failure.
func TestExpiredTokenRefreshedOnce(t *testing.T) {
	srv := drivetest.New(t)
	c := testClient(t, srv, "root")
	if _, err := deliver(t, c, "a.pdf", []byte("one")); err != nil {
		t.Fatal(err)
	}
	srv.ExpireTokens()
	if _, err := deliver(t, c, "a.pdf", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if srv.Refreshes() != 2 {
		t.Fatalf("refreshes %d", srv.Refreshes())
	}
	srv.Fail("chunk", 1, http.StatusUnauthorized, nil, `{"error": {"code": 401, "errors": [{"reason": "authError"}]}}`)
	big := make([]byte, 2*googledrive.ChunkUnit+1)
	if _, err := deliver(t, c, "big.pdf", big); err != nil {
		t.Fatal(err)
	}
	if srv.Refreshes() != 3 {
		t.Fatalf("refreshes %d", srv.Refreshes())
	}
	srv.Fail("list", 2, http.StatusUnauthorized, nil, `{"error": {"code": 401, "errors": [{"reason": "authError"}], "status": "UNAUTHENTICATED"}}`)
	_, err := deliver(t, c, "a.pdf", []byte("three"))
	if de := class(t, err, docflow.DestAuth); srv.Refreshes() != 4 || de.Reason != "Google Drive answered HTTP 401 (authError)" {
		t.Fatalf("refreshes %d, reason %q", srv.Refreshes(), de.Reason)
	}
}

// Wrong credentials are refused with the token endpoint's error code.
func TestBadCredentials(t *testing.T) {
	srv := drivetest.New(t)
	for cfg, code := range map[googledrive.Config]string{
		{RefreshToken: "wrong", ClientID: drivetest.ClientID, ClientSecret: drivetest.ClientSecret}: "invalid_grant",
		{RefreshToken: drivetest.RefreshToken, ClientID: "x", ClientSecret: drivetest.ClientSecret}: "invalid_client",
	} {
		c, err := googledrive.New(cfg, options(srv))
		if err != nil {
			t.Fatal(err)
		}
		de := class(t, c.Connect(context.Background()), docflow.DestAuth)
		if !strings.Contains(de.Reason, code) || strings.Contains(de.Reason, "revoked") {
			t.Fatalf("reason %q", de.Reason)
		}
	}
}

// Quota, permission, a missing folder, throttling (429 and Drive's 403
// userRateLimitExceeded) and server errors keep their classes.
func TestFailures(t *testing.T) {
	srv := drivetest.New(t)
	ro := srv.Mkdir("root", "ro")
	srv.ReadOnly(ro)
	_, err := deliver(t, testClient(t, srv, ro), "a.pdf", []byte("x"))
	if de := class(t, err, docflow.DestForbidden); de.Reason != "Google Drive answered HTTP 403 (insufficientFilePermissions)" {
		t.Fatalf("reason %q", de.Reason)
	}
	_, err = deliver(t, testClient(t, srv, "gone"), "a.pdf", []byte("x"))
	class(t, err, docflow.DestForbidden)

	c := testClient(t, srv, "root")
	srv.SetQuota(10)
	_, err = deliver(t, c, "a.pdf", []byte("more than ten bytes"))
	class(t, err, docflow.DestFull)
	_, err = deliver(t, c, "big.pdf", make([]byte, 2*googledrive.ChunkUnit+3))
	class(t, err, docflow.DestFull)
	srv.SetQuota(0)

	srv.RateLimit("upload", 1, 9)
	_, err = deliver(t, c, "a.pdf", []byte("x"))
	if de := class(t, err, docflow.DestRateLimited); de.RetryAfter != 9*time.Second {
		t.Fatalf("retry after %v", de.RetryAfter)
	}
	srv.UserRateLimit("list", 1)
	_, err = deliver(t, c, "a.pdf", []byte("x"))
	class(t, err, docflow.DestRateLimited)
	srv.Fail("chunk", 1, http.StatusInternalServerError, nil, "")
	_, err = deliver(t, c, "big.pdf", make([]byte, 2*googledrive.ChunkUnit+3))
	class(t, err, docflow.DestUnavailable)
	srv.Fail("chunk", 1, http.StatusNotFound, nil, "")
	_, err = deliver(t, c, "big.pdf", make([]byte, 2*googledrive.ChunkUnit+3))
	class(t, err, docflow.DestUnavailable)
}

// The probe creates a file and deletes it.
func TestProbe(t *testing.T) {
	srv := drivetest.New(t)
	folder := srv.Mkdir("root", "Docs")
	c := testClient(t, srv, folder)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(srv.Files(folder)) != 0 || srv.Calls("delete") != 1 {
		t.Fatalf("left %v", srv.Files(folder))
	}
	srv.ReadOnly(folder)
	class(t, c.Probe(context.Background()), docflow.DestForbidden)
}

// The folder browser lists the folders inside a folder id, each with its
// id as path.
func TestListFolders(t *testing.T) {
	srv := drivetest.New(t)
	inv := srv.Mkdir("root", "Invoices")
	y := srv.Mkdir(inv, "2026")
	srv.Mkdir("root", "Archive")
	c := testClient(t, srv, "root")
	if _, err := deliver(t, c, "loose.pdf", []byte("x")); err != nil {
		t.Fatal(err)
	}
	b := googledrive.Browser{Options: func() googledrive.Options { return options(srv) }}
	tok := "ya29.test-1"
	page, err := b.ListFolders(context.Background(), tok, "")
	if err != nil {
		t.Fatal(err)
	}
	if page.Path != "root" || page.HasMore || len(page.Folders) != 2 || page.Folders[0].Name != "Archive" || page.Folders[1].Path != inv {
		t.Fatalf("root: %+v", page)
	}
	page, err = b.ListFolders(context.Background(), tok, inv)
	if err != nil || len(page.Folders) != 1 || page.Folders[0].ID != y {
		t.Fatalf("Invoices: %+v %v", page, err)
	}
	if _, err = b.ListFolders(context.Background(), tok, "nope"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("missing: %v", err)
	}
	if _, err = b.ListFolders(context.Background(), "bad", ""); docflow.ErrorCode(err) != docflow.EBADREQUEST {
		t.Fatalf("bad token: %v", err)
	}
}
