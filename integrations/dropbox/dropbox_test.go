package dropbox_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/dropbox"
	"docflow/integrations/dropbox/dropboxtest"
	"docflow/internal/netguard"
)

func testClient(t *testing.T, srv *dropboxtest.Server, folder string, chunk int) *dropbox.Client {
	t.Helper()
	c, err := dropbox.New(dropbox.Config{Folder: dropbox.Folder(folder), RefreshToken: dropboxtest.RefreshToken,
		AppKey: dropboxtest.AppKey, AppSecret: dropboxtest.AppSecret}, options(srv, chunk))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func options(srv *dropboxtest.Server, chunk int) dropbox.Options {
	return dropbox.Options{
		HTTP:   netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}, Timeout: 10 * time.Second}),
		APIURL: srv.URL, ContentURL: srv.URL, ChunkSize: chunk,
	}
}

func deliver(t *testing.T, c *dropbox.Client, name string, data []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Deliver(ctx, docflow.DestinationDoc{FileID: 1, Name: name, Size: int64(len(data))}, bytes.NewReader(data))
}

func class(t *testing.T, err error, want docflow.DestinationFailure) *docflow.DestinationError {
	t.Helper()
	var de *docflow.DestinationError
	if !errors.As(err, &de) || de.Class != want {
		t.Fatalf("error %v: want class %s", err, want)
	}
	return de
}

// A document is stored in the folder; delivered again with other bytes it
// replaces the first, never a second copy.
func TestDeliverAndOverwrite(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/Docs/", 1<<20)
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := deliver(t, c, "Invoice ACME.pdf", []byte("first"))
	if err != nil || got != "/Docs/Invoice ACME.pdf" {
		t.Fatalf("deliver: %q %v", got, err)
	}
	if _, err := deliver(t, c, "Invoice ACME.pdf", []byte("second version")); err != nil {
		t.Fatal(err)
	}
	if p := srv.Paths(); len(p) != 1 {
		t.Fatalf("files after two deliveries: %v", p)
	}
	if f := srv.File("/docs/invoice acme.pdf"); f == nil || string(f.Data) != "second version" {
		t.Fatalf("stored: %+v", f)
	}
}

// Names outside ASCII reach Dropbox intact (the API argument header is
// escaped JSON), and characters Dropbox refuses are replaced.
func TestDeliverNames(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/", 0)
	got, err := deliver(t, c, "Rechnung Müller 😀.pdf", []byte("x"))
	if err != nil || got != "/Rechnung Müller 😀.pdf" {
		t.Fatalf("deliver: %q %v", got, err)
	}
	got, err = deliver(t, c, `a:b*c?.pdf.`, []byte("x"))
	if err != nil || got != "/a_b_c_.pdf" {
		t.Fatalf("deliver: %q %v", got, err)
	}
}

// Above one chunk a document goes through an upload session, one chunk
// per request; a body ending on a chunk's edge finishes with an empty one.
func TestDeliverLarge(t *testing.T) {
	for _, size := range []int{3*64<<10 + 7, 3 * 64 << 10} {
		srv := dropboxtest.New(t)
		c := testClient(t, srv, "/big", 64<<10)
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		if _, err := deliver(t, c, "big.pdf", data); err != nil {
			t.Fatal(err)
		}
		if f := srv.File("/big/big.pdf"); f == nil || !bytes.Equal(f.Data, data) {
			t.Fatalf("size %d: stored file differs", size)
		}
		if srv.Calls("files/upload") != 0 || srv.Calls("files/upload_session/start") != 1 ||
			srv.Calls("files/upload_session/append_v2") != 2 || srv.Calls("files/upload_session/finish") != 1 {
			t.Fatalf("size %d: calls start %d append %d finish %d", size, srv.Calls("files/upload_session/start"),
				srv.Calls("files/upload_session/append_v2"), srv.Calls("files/upload_session/finish"))
		}
	}
}

// A body shorter than its announced size is not committed.
func TestDeliverShortBody(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/", 64<<10)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 200 << 10}, bytes.NewReader(make([]byte, 100<<10)))
	if err == nil || len(srv.Paths()) != 0 {
		t.Fatalf("short body: %v, files %v", err, srv.Paths())
	}
}

// An access token that expired is refreshed once and the call sent
// again; a second 401 after the refresh is an authentication failure.
func TestExpiredTokenRefreshedOnce(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/", 64<<10)
	if _, err := deliver(t, c, "a.pdf", []byte("one")); err != nil {
		t.Fatal(err)
	}
	srv.ExpireTokens()
	if _, err := deliver(t, c, "a.pdf", []byte("two")); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	if srv.Refreshes() != 2 || srv.Calls("files/upload") != 3 {
		t.Fatalf("refreshes %d uploads %d", srv.Refreshes(), srv.Calls("files/upload"))
	}
	// In a session, the chunk that met the expiry is sent again.
	srv.ExpireTokens()
	big := bytes.Repeat([]byte("z"), 100<<10)
	if _, err := deliver(t, c, "big.pdf", big); err != nil {
		t.Fatal(err)
	}
	if f := srv.File("/big.pdf"); f == nil || !bytes.Equal(f.Data, big) {
		t.Fatal("session after expiry stored other bytes")
	}

	expired := `{"error_summary": "expired_access_token/..", "error": {".tag": "expired_access_token"}}`
	srv.Fail("files/upload", 2, http.StatusUnauthorized, http.Header{"Content-Type": {"application/json"}}, expired)
	before := srv.Refreshes()
	_, err := deliver(t, c, "a.pdf", []byte("three"))
	de := class(t, err, docflow.DestAuth)
	if srv.Refreshes() != before+1 || !strings.Contains(de.Reason, "expired_access_token") {
		t.Fatalf("refreshes %d→%d, reason %q", before, srv.Refreshes(), de.Reason)
	}
}

// Wrong credentials are refused with the token endpoint's error code.
func TestBadCredentials(t *testing.T) {
	srv := dropboxtest.New(t)
	for _, cfg := range []dropbox.Config{
		{RefreshToken: "wrong", AppKey: dropboxtest.AppKey, AppSecret: dropboxtest.AppSecret},
		{RefreshToken: dropboxtest.RefreshToken, AppKey: dropboxtest.AppKey, AppSecret: "wrong"},
	} {
		c, err := dropbox.New(cfg, options(srv, 0))
		if err != nil {
			t.Fatal(err)
		}
		de := class(t, c.Connect(context.Background()), docflow.DestAuth)
		if !strings.Contains(de.Reason, "invalid_grant") && !strings.Contains(de.Reason, "invalid_client") {
			t.Fatalf("reason %q", de.Reason)
		}
		_, err = deliver(t, c, "a.pdf", []byte("x"))
		class(t, err, docflow.DestAuth)
	}
}

// The far side's refusals keep their class: quota full, no write
// permission, rate limited with its wait, a server error, a malformed
// call, no server at all.
func TestFailures(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/ro", 64<<10)

	srv.ReadOnly("/ro")
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	de := class(t, err, docflow.DestForbidden)
	if !strings.Contains(de.Reason, "no_write_permission") {
		t.Fatalf("reason %q", de.Reason)
	}

	c = testClient(t, srv, "/", 64<<10)
	srv.SetQuota(10)
	_, err = deliver(t, c, "a.pdf", []byte("more than ten bytes"))
	de = class(t, err, docflow.DestFull)
	if de.Reason != "Dropbox answered HTTP 409 (path/insufficient_space)" {
		t.Fatalf("reason %q", de.Reason)
	}
	_, err = deliver(t, c, "big.pdf", make([]byte, 100<<10))
	class(t, err, docflow.DestFull)
	srv.SetQuota(0)

	srv.RateLimit("files/upload", 1, 30)
	_, err = deliver(t, c, "a.pdf", []byte("x"))
	de = class(t, err, docflow.DestRateLimited)
	if de.RetryAfter != 30*time.Second {
		t.Fatalf("retry after %v", de.RetryAfter)
	}
	srv.Fail("files/upload_session/append_v2", 1, http.StatusServiceUnavailable, http.Header{"Retry-After": {"5"}}, "")
	_, err = deliver(t, c, "big.pdf", make([]byte, 200<<10))
	if de = class(t, err, docflow.DestRateLimited); de.RetryAfter != 5*time.Second {
		t.Fatalf("retry after %v", de.RetryAfter)
	}
	srv.Fail("files/upload", 1, http.StatusInternalServerError, nil, "<html>oops</html>")
	_, err = deliver(t, c, "a.pdf", []byte("x"))
	if de = class(t, err, docflow.DestUnavailable); strings.Contains(de.Reason, "oops") {
		t.Fatalf("reason %q", de.Reason)
	}

	url := srv.URL
	srv.Close()
	c, _ = dropbox.New(dropbox.Config{RefreshToken: "r", AppKey: "k", AppSecret: "s"}, dropbox.Options{
		HTTP: netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}}), APIURL: url, ContentURL: url})
	de = class(t, c.Connect(context.Background()), docflow.DestUnavailable)
	if de.Reason != "Dropbox: "+netguard.FailConnect {
		t.Fatalf("reason %q", de.Reason)
	}
}

// The probe writes a file and removes it; a folder that refuses writes
// fails it.
func TestProbe(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/Docs", 0)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := srv.Paths(); len(p) != 0 || srv.Calls("files/delete_v2") != 1 {
		t.Fatalf("left behind: %v", p)
	}
	srv.ReadOnly("/docs")
	class(t, c.Probe(context.Background()), docflow.DestForbidden)
}

// The folder browser lists the folders inside a path with the caller's
// access token.
func TestListFolders(t *testing.T) {
	srv := dropboxtest.New(t)
	c := testClient(t, srv, "/", 0)
	srv.MkdirAll("/Invoices/2026")
	srv.MkdirAll("/Receipts")
	if _, err := deliver(t, c, "loose.pdf", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	tok := "sl.test-1"
	b := dropbox.Browser{Options: func() dropbox.Options { return options(srv, 0) }}
	page, err := b.ListFolders(context.Background(), tok, "")
	if err != nil {
		t.Fatal(err)
	}
	if page.Path != "/" || page.HasMore || len(page.Folders) != 2 || page.Folders[0].Name != "Invoices" || page.Folders[0].Path != "/Invoices" || page.Folders[0].ID == "" {
		t.Fatalf("root: %+v", page)
	}
	page, err = b.ListFolders(context.Background(), tok, "/Invoices/")
	if err != nil || len(page.Folders) != 1 || page.Folders[0].Path != "/Invoices/2026" || page.Path != "/Invoices" {
		t.Fatalf("/Invoices: %+v %v", page, err)
	}
	_, err = b.ListFolders(context.Background(), tok, "/nope")
	if docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("missing folder: %v", err)
	}
	_, err = b.ListFolders(context.Background(), "bad-token", "")
	if docflow.ErrorCode(err) != docflow.EBADREQUEST || !strings.Contains(docflow.ErrorMessage(err), "invalid_access_token") {
		t.Fatalf("bad token: %v", err)
	}
	srv.RateLimit("files/list_folder", 1, 7)
	_, err = b.ListFolders(context.Background(), tok, "")
	var e *docflow.Error
	if !errors.As(err, &e) || e.Code != docflow.ERATELIMIT || e.RetryAfter != 7 {
		t.Fatalf("rate limited: %v", err)
	}
}
