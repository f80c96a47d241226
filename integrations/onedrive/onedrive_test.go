package onedrive_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/onedrive"
	"docflow/integrations/onedrive/onedrivetest"
	"docflow/internal/netguard"
)

func options(srv *onedrivetest.Server) onedrive.Options {
	return onedrive.Options{
		HTTP:   netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}, Timeout: 10 * time.Second}),
		APIURL: srv.APIURL(), LoginURL: srv.URL, ChunkSize: onedrive.FragmentUnit,
	}
}

func testClient(t *testing.T, srv *onedrivetest.Server, folder string) *onedrive.Client {
	t.Helper()
	c, err := onedrive.New(onedrive.Config{Folder: onedrive.Folder(folder), RefreshToken: onedrivetest.RefreshToken,
		ClientID: onedrivetest.ClientID, ClientSecret: onedrivetest.ClientSecret}, options(srv))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func deliver(t *testing.T, c *onedrive.Client, name string, data []byte) (string, error) {
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

// A document is stored in the folder (tenant common by default);
// delivered again it replaces the first.
func TestDeliverAndOverwrite(t *testing.T) {
	srv := onedrivetest.New(t)
	c := testClient(t, srv, "/Scans/2026/")
	got, err := deliver(t, c, "Invoice ACME.pdf", []byte("first"))
	if err != nil || got != "/Scans/2026/Invoice ACME.pdf" {
		t.Fatalf("deliver: %q %v", got, err)
	}
	if _, err := deliver(t, c, "Invoice ACME.pdf", []byte("second version")); err != nil {
		t.Fatal(err)
	}
	if p := srv.Paths(); len(p) != 1 {
		t.Fatalf("files: %v", p)
	}
	if f := srv.File("/scans/2026/invoice acme.pdf"); f == nil || string(f.Data) != "second version" {
		t.Fatalf("stored %+v", f)
	}
	if tn := srv.Tenants(); len(tn) != 1 || tn[0] != "common" {
		t.Fatalf("tenants %v", tn)
	}
	got, err = deliver(t, c, `Größe: "A|B" 50%.pdf`, []byte("x"))
	if err != nil || got != "/Scans/2026/Größe_ _A_B_ 50%.pdf" || srv.File(got) == nil || c.DestinationName(`a:b`) != "a_b" {
		t.Fatalf("odd name: %q %v %v", got, err, srv.Paths())
	}
	_, err = deliver(t, c, "../escape.pdf", []byte("x"))
	class(t, err, docflow.DestInvalid)
}

// Above one chunk a document goes through an upload session in ranged
// PUTs of whole 320 KiB units, without the access token.
func TestDeliverLarge(t *testing.T) {
	for _, size := range []int{3*onedrive.FragmentUnit + 7, 2 * onedrive.FragmentUnit, onedrive.FragmentUnit} {
		srv := onedrivetest.New(t)
		c := testClient(t, srv, "/big")
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		if _, err := deliver(t, c, "big.pdf", data); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if f := srv.File("/big/big.pdf"); f == nil || !bytes.Equal(f.Data, data) {
			t.Fatalf("size %d: stored file differs", size)
		}
		wantFragments := (size + onedrive.FragmentUnit - 1) / onedrive.FragmentUnit
		if size == onedrive.FragmentUnit {
			wantFragments = 0
		}
		if srv.Calls("fragment") != wantFragments || srv.Sessions() != 0 {
			t.Fatalf("size %d: fragments %d, open sessions %d", size, srv.Calls("fragment"), srv.Sessions())
		}
	}
}

// A body shorter or longer than announced is not committed, and the
// upload session is cancelled.
func TestDeliverWrongSize(t *testing.T) {
	srv := onedrivetest.New(t)
	c := testClient(t, srv, "/")
	body := make([]byte, 2*onedrive.FragmentUnit+5)
	for _, size := range []int64{3 * onedrive.FragmentUnit, onedrive.FragmentUnit + 1, 4} {
		_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: size}, bytes.NewReader(body))
		if err == nil || len(srv.Paths()) != 0 || srv.Sessions() != 0 {
			t.Fatalf("size %d: %v, files %v, sessions %d", size, err, srv.Paths(), srv.Sessions())
		}
	}
}

// An expired access token is refreshed once and the call sent again; a
// rotated refresh token is handed over and used from then on.
func TestExpiredTokenRefreshedOnce(t *testing.T) {
	srv := onedrivetest.New(t)
	srv.RotateRefreshTokens()
	var rotated []string
	o := options(srv)
	o.OnRefreshToken = func(rt string) { rotated = append(rotated, rt) }
	c, err := onedrive.New(onedrive.Config{Tenant: "contoso.onmicrosoft.com", RefreshToken: onedrivetest.RefreshToken,
		ClientID: onedrivetest.ClientID, ClientSecret: onedrivetest.ClientSecret}, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deliver(t, c, "a.pdf", []byte("one")); err != nil {
		t.Fatal(err)
	}
	srv.ExpireTokens()
	if _, err := deliver(t, c, "a.pdf", []byte("two")); err != nil {
		t.Fatal(err)
	}
	if srv.Refreshes() != 2 || srv.Calls("content") != 3 || len(rotated) != 2 || rotated[1] == rotated[0] {
		t.Fatalf("refreshes %d, uploads %d, rotated %v", srv.Refreshes(), srv.Calls("content"), rotated)
	}
	if tn := srv.Tenants(); tn[0] != "contoso.onmicrosoft.com" {
		t.Fatalf("tenant %v", tn)
	}
	srv.Fail("content", 2, http.StatusUnauthorized, http.Header{"Content-Type": {"application/json"}},
		`{"error": {"code": "InvalidAuthenticationToken", "message": "Access token has expired or is not yet valid."}}`)
	_, err = deliver(t, c, "a.pdf", []byte("three"))
	de := class(t, err, docflow.DestAuth)
	if srv.Refreshes() != 3 || de.Reason != "OneDrive answered HTTP 401 (InvalidAuthenticationToken)" {
		t.Fatalf("refreshes %d, reason %q", srv.Refreshes(), de.Reason)
	}
}

// Wrong credentials are refused with the identity platform's error code.
func TestBadCredentials(t *testing.T) {
	srv := onedrivetest.New(t)
	for cfg, code := range map[onedrive.Config]string{
		{RefreshToken: "wrong", ClientID: onedrivetest.ClientID, ClientSecret: onedrivetest.ClientSecret}: "invalid_grant",
		{RefreshToken: onedrivetest.RefreshToken, ClientID: onedrivetest.ClientID, ClientSecret: "x"}:     "invalid_client",
	} {
		c, err := onedrive.New(cfg, options(srv))
		if err != nil {
			t.Fatal(err)
		}
		de := class(t, c.Connect(context.Background()), docflow.DestAuth)
		if !strings.Contains(de.Reason, code) || strings.Contains(de.Reason, "AADSTS") {
			t.Fatalf("reason %q", de.Reason)
		}
	}
	if _, err := onedrive.New(onedrive.Config{Tenant: "../evil"}, options(srv)); err == nil {
		t.Fatal("a tenant with a path accepted")
	}
}

// Quota, permission, throttling and server errors keep their classes; a
// failed session is cancelled.
func TestFailures(t *testing.T) {
	srv := onedrivetest.New(t)
	c := testClient(t, srv, "/ro")
	srv.ReadOnly("/ro")
	_, err := deliver(t, c, "a.pdf", []byte("x"))
	if de := class(t, err, docflow.DestForbidden); de.Reason != "OneDrive answered HTTP 403 (accessDenied)" {
		t.Fatalf("reason %q", de.Reason)
	}

	c = testClient(t, srv, "/")
	srv.SetQuota(10)
	_, err = deliver(t, c, "a.pdf", []byte("more than ten bytes"))
	class(t, err, docflow.DestFull)
	_, err = deliver(t, c, "big.pdf", make([]byte, 2*onedrive.FragmentUnit))
	class(t, err, docflow.DestFull)
	srv.SetQuota(0)

	srv.RateLimit("content", 1, 12)
	_, err = deliver(t, c, "a.pdf", []byte("x"))
	if de := class(t, err, docflow.DestRateLimited); de.RetryAfter != 12*time.Second {
		t.Fatalf("retry after %v", de.RetryAfter)
	}
	srv.Fail("fragment", 1, http.StatusServiceUnavailable, http.Header{"Retry-After": {"3"}}, "")
	_, err = deliver(t, c, "big.pdf", make([]byte, 3*onedrive.FragmentUnit))
	if de := class(t, err, docflow.DestRateLimited); de.RetryAfter != 3*time.Second || srv.Sessions() != 0 {
		t.Fatalf("retry after %v, sessions %d", de.RetryAfter, srv.Sessions())
	}
	srv.Fail("fragment", 1, http.StatusNotFound, nil, `{"error": {"code": "itemNotFound"}}`)
	_, err = deliver(t, c, "big.pdf", make([]byte, 3*onedrive.FragmentUnit))
	class(t, err, docflow.DestUnavailable)
	srv.Fail("createUploadSession", 1, http.StatusBadGateway, nil, "<html>proxy</html>")
	_, err = deliver(t, c, "big.pdf", make([]byte, 3*onedrive.FragmentUnit))
	class(t, err, docflow.DestUnavailable)
}

// The probe writes a file and removes it (to the recycle bin).
func TestProbe(t *testing.T) {
	srv := onedrivetest.New(t)
	c := testClient(t, srv, "/Docs")
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p, r := srv.Paths(), srv.Recycled(); len(p) != 0 || len(r) != 1 || !strings.HasPrefix(r[0], "/Docs/docflow-probe-") {
		t.Fatalf("left %v, recycled %v", p, r)
	}
	srv.ReadOnly("/docs")
	class(t, c.Probe(context.Background()), docflow.DestForbidden)
}

// The folder browser lists folders with their child counts, following
// the next pages on the API's host only.
func TestListFolders(t *testing.T) {
	srv := onedrivetest.New(t)
	c := testClient(t, srv, "/Invoices")
	srv.MkdirAll("/Invoices/2026")
	srv.MkdirAll("/Receipts")
	if _, err := deliver(t, c, "a.pdf", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		srv.MkdirAll("/Many/f" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26)))
	}
	tok := "eyJ0eXAi.test-1"
	b := onedrive.Browser{Options: func() onedrive.Options { return options(srv) }}
	page, err := b.ListFolders(context.Background(), tok, "/")
	if err != nil {
		t.Fatal(err)
	}
	if page.Path != "/" || len(page.Folders) != 3 || page.Folders[0].Name != "Invoices" || page.Folders[0].Path != "/Invoices" || page.Folders[0].ChildCount != 2 {
		t.Fatalf("root: %+v", page)
	}
	page, err = b.ListFolders(context.Background(), tok, "Many")
	if err != nil || len(page.Folders) != 250 || page.HasMore {
		t.Fatalf("Many: %d folders, more %v, %v", len(page.Folders), page.HasMore, err)
	}
	if _, err = b.ListFolders(context.Background(), tok, "/nope"); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("missing: %v", err)
	}
	if _, err = b.ListFolders(context.Background(), "bad", "/"); docflow.ErrorCode(err) != docflow.EBADREQUEST {
		t.Fatalf("bad token: %v", err)
	}
}
