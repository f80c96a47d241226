package paperless_test

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"docflow"
	"docflow/integrations/paperless"
	"docflow/integrations/paperless/paperlesstest"
	"docflow/internal/netguard"
)

func loopback() netguard.Dialer {
	return netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }}
}

func testClient(t *testing.T, srv *paperlesstest.Server, token string) *paperless.Client {
	t.Helper()
	c, err := paperless.New(paperless.Config{URL: srv.URL, Token: token},
		paperless.Options{Dialer: loopback(), PollInterval: 5 * time.Millisecond, TaskWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pdf(s string) []byte { return []byte("%PDF-1.7\n" + s) }

func deliver(t *testing.T, c *paperless.Client, doc docflow.DestinationDoc, data []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if doc.Name == "" {
		doc.Name = "scan.pdf"
	}
	doc.Size = int64(len(data))
	return c.Deliver(ctx, doc, bytes.NewReader(data))
}

func class(t *testing.T, err error, want docflow.DestinationFailure) *docflow.DestinationError {
	t.Helper()
	var de *docflow.DestinationError
	if !errors.As(err, &de) || de.Class != want {
		t.Fatalf("error %v: want class %s", err, want)
	}
	return de
}

// A document reaches Paperless with its title, date, correspondent and
// tags: existing ones found by name in any case, missing ones created
// without automatic matching. The upload carries a Content-Length.
func TestDeliverWithMetadata(t *testing.T) {
	srv := paperlesstest.New(t)
	invoices := srv.AddObject("tags", "Invoices")
	c := testClient(t, srv, paperlesstest.Token)
	data := pdf(strings.Repeat("x", 3<<20))
	got, err := deliver(t, c, docflow.DestinationDoc{Name: "2026-11-29 ACME.pdf", MimeType: "application/pdf", Title: "ACME invoice 42",
		Date: "2026-11-29", Correspondent: "ACME Corp", Tags: []string{"invoices", "Tax 2026", "Tax 2026", " "}}, data)
	if err != nil {
		t.Fatal(err)
	}
	docs := srv.Documents()
	if len(docs) != 1 || got != srv.URL+"/documents/"+strconv.FormatInt(docs[0].ID, 10)+"/details" {
		t.Fatalf("delivered %q, documents %d", got, len(docs))
	}
	d := docs[0]
	if d.Title != "ACME invoice 42" || d.Created != "2026-11-29" || d.OriginalFilename != "2026-11-29 ACME.pdf" || !bytes.Equal(d.Data, data) {
		t.Fatalf("document %+v", d.Title)
	}
	if srv.ObjectName("correspondents", d.Correspondent) != "ACME Corp" || len(d.Tags) != 2 || d.Tags[0] != invoices ||
		srv.ObjectName("tags", d.Tags[1]) != "Tax 2026" {
		t.Fatalf("correspondent %d tags %v (%v)", d.Correspondent, d.Tags, srv.Objects("tags"))
	}
	if n, chunked := srv.LastUpload(); chunked || n < int64(len(data)) {
		t.Fatalf("upload length %d chunked %v", n, chunked)
	}
	// Ids are cached: a second document asks for nothing again.
	before := srv.Calls("tags")
	if _, err := deliver(t, c, docflow.DestinationDoc{Tags: []string{"Invoices", "tax 2026"}}, pdf("two")); err != nil {
		t.Fatal(err)
	}
	if srv.Calls("tags") != before {
		t.Fatalf("tag lookups %d → %d", before, srv.Calls("tags"))
	}
}

// The same bytes delivered again are the document Paperless holds (its
// duplicate check), not a second one.
func TestRedelivery(t *testing.T) {
	srv := paperlesstest.New(t)
	c := testClient(t, srv, paperlesstest.Token)
	first, err := deliver(t, c, docflow.DestinationDoc{Title: "A"}, pdf("same"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := deliver(t, c, docflow.DestinationDoc{Title: "A"}, pdf("same"))
	if err != nil || again != first || len(srv.Documents()) != 1 {
		t.Fatalf("again %q (first %q) %v, %d documents", again, first, err, len(srv.Documents()))
	}
}

// Consumption still running after the wait leaves the upload queued in
// Paperless: delivered, named by its task.
func TestConsumptionPending(t *testing.T) {
	srv := paperlesstest.New(t)
	srv.SetConsumeDelay(time.Hour)
	c, err := paperless.New(paperless.Config{URL: srv.URL + "/", Token: paperlesstest.Token},
		paperless.Options{Dialer: loopback(), PollInterval: 5 * time.Millisecond, TaskWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deliver(t, c, docflow.DestinationDoc{}, pdf("slow"))
	if err != nil || !strings.HasPrefix(got, "task ") || srv.Calls("tasks") < 2 {
		t.Fatalf("pending: %q %v, task looks %d", got, err, srv.Calls("tasks"))
	}
	// A task that started (past Paperless's checks) is not waited for.
	srv.SetConsumeDelay(0)
	srv.SetRunTime(time.Hour)
	c, _ = paperless.New(paperless.Config{URL: srv.URL, Token: paperlesstest.Token},
		paperless.Options{Dialer: loopback(), PollInterval: 5 * time.Millisecond, TaskWait: time.Hour})
	start := time.Now()
	got, err = deliver(t, c, docflow.DestinationDoc{}, pdf("long OCR"))
	// The task runs an hour: a minute bounds a delivery that waited for it.
	if err != nil || !strings.HasPrefix(got, "task ") || time.Since(start) > time.Minute {
		t.Fatalf("running: %q %v after %v", got, err, time.Since(start))
	}
}

// Refusals keep their class, in Paperless's status and field names, never
// its text.
func TestFailures(t *testing.T) {
	srv := paperlesstest.New(t)
	_, err := deliver(t, testClient(t, srv, "wrong"), docflow.DestinationDoc{}, pdf("x"))
	if de := class(t, err, docflow.DestAuth); de.Reason != "Paperless answered HTTP 401" {
		t.Fatalf("reason %q", de.Reason)
	}
	c := testClient(t, srv, paperlesstest.Token)

	srv.DiskFull(true)
	_, err = deliver(t, c, docflow.DestinationDoc{}, pdf("full"))
	class(t, err, docflow.DestFull)
	srv.DiskFull(false)

	_, err = deliver(t, c, docflow.DestinationDoc{Name: "a.bin"}, []byte("not a pdf"))
	if de := class(t, err, docflow.DestInvalid); de.Reason != "Paperless does not take this file type" {
		t.Fatalf("reason %q", de.Reason)
	}

	srv.SetMaxUpload(1 << 10)
	_, err = deliver(t, c, docflow.DestinationDoc{}, pdf(strings.Repeat("y", 4<<10)))
	if de := class(t, err, docflow.DestInvalid); de.Reason != "Paperless answered HTTP 413" {
		t.Fatalf("reason %q", de.Reason)
	}
	srv.SetMaxUpload(0)

	srv.Fail("post_document", 1, http.StatusBadRequest, http.Header{"Content-Type": {"application/json"}},
		`{"document": ["secret internal text"], "Ignored Key!": ["x"]}`)
	_, err = deliver(t, c, docflow.DestinationDoc{}, pdf("bad"))
	if de := class(t, err, docflow.DestInvalid); de.Reason != "Paperless answered HTTP 400 (invalid document)" {
		t.Fatalf("reason %q", de.Reason)
	}
	srv.Fail("post_document", 1, http.StatusTooManyRequests, http.Header{"Retry-After": {"20"}}, "")
	_, err = deliver(t, c, docflow.DestinationDoc{}, pdf("slow down"))
	if de := class(t, err, docflow.DestRateLimited); de.RetryAfter != 20*time.Second {
		t.Fatalf("retry after %v", de.RetryAfter)
	}
	srv.Fail("post_document", 1, http.StatusBadGateway, nil, "<html>nginx</html>")
	_, err = deliver(t, c, docflow.DestinationDoc{}, pdf("gateway"))
	class(t, err, docflow.DestUnavailable)

	// A tag lookup that failed is looked up again next time.
	srv.Fail("tags", 1, http.StatusServiceUnavailable, nil, "")
	_, err = deliver(t, c, docflow.DestinationDoc{Tags: []string{"again"}}, pdf("tag down"))
	class(t, err, docflow.DestUnavailable)
	if _, err = deliver(t, c, docflow.DestinationDoc{Tags: []string{"again"}}, pdf("tag down")); err != nil {
		t.Fatal(err)
	}
	if d := srv.Documents(); len(d) != 1 || len(d[0].Tags) != 1 {
		t.Fatalf("documents %+v", d)
	}
	srv.SetPermissions("view_document", "view_tag")
	_, err = deliver(t, c, docflow.DestinationDoc{Tags: []string{"new tag"}}, pdf("no right"))
	class(t, err, docflow.DestForbidden)
	if tags := srv.Objects("tags"); len(tags) != 1 || tags[0] != "again" {
		t.Fatalf("tags made without the right: %v", tags)
	}

	if len(srv.Documents()) != 1 {
		t.Fatalf("documents after failures: %d", len(srv.Documents()))
	}
	_, err = c.Deliver(context.Background(), docflow.DestinationDoc{Name: "short.pdf", Size: 100}, iotest.HalfReader(bytes.NewReader(pdf("short"))))
	if err == nil || len(srv.Documents()) != 1 {
		t.Fatalf("short body: %v", err)
	}
}

// A user who may add documents but not tags gets the document without
// them.
func TestTagsRefused(t *testing.T) {
	srv := paperlesstest.New(t)
	srv.NoCreate("tags")
	c := testClient(t, srv, paperlesstest.Token)
	if _, err := deliver(t, c, docflow.DestinationDoc{Tags: []string{"new"}, Correspondent: "Bob"}, pdf("x")); err != nil {
		t.Fatal(err)
	}
	d := srv.Documents()
	if len(d) != 1 || len(d[0].Tags) != 0 || srv.ObjectName("correspondents", d[0].Correspondent) != "Bob" {
		t.Fatalf("documents %+v", d)
	}
}

// The probe reads the user's permissions and writes nothing.
func TestProbe(t *testing.T) {
	srv := paperlesstest.New(t)
	c := testClient(t, srv, paperlesstest.Token)
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	class(t, testClient(t, srv, "wrong").Probe(context.Background()), docflow.DestAuth)
	srv.SetPermissions("view_document", "view_uisettings")
	de := class(t, c.Probe(context.Background()), docflow.DestForbidden)
	if !strings.Contains(de.Reason, "add_document") {
		t.Fatalf("reason %q", de.Reason)
	}
	srv.NoUISettings()
	if err := c.Probe(context.Background()); err != nil {
		t.Fatalf("without UI settings: %v", err)
	}
	if srv.Calls("post_document") != 0 || len(srv.Documents()) != 0 {
		t.Fatal("the probe wrote")
	}
}

// Paperless is a server a user configured: private addresses are refused
// unless allowed, and a private CA is trusted only when given.
func TestConnection(t *testing.T) {
	srv := paperlesstest.NewTLS(t)
	c, err := paperless.New(paperless.Config{URL: srv.URL, Token: paperlesstest.Token}, paperless.Options{Dialer: netguard.Dialer{}})
	if err != nil {
		t.Fatal(err)
	}
	if de := class(t, c.Probe(context.Background()), docflow.DestUnavailable); de.Reason != "Paperless: "+netguard.FailPrivate {
		t.Fatalf("reason %q", de.Reason)
	}
	c, _ = paperless.New(paperless.Config{URL: srv.URL, Token: paperlesstest.Token}, paperless.Options{Dialer: loopback()})
	if de := class(t, c.Probe(context.Background()), docflow.DestUnavailable); de.Reason != "Paperless: "+netguard.FailUntrusted {
		t.Fatalf("reason %q", de.Reason)
	}
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	c, _ = paperless.New(paperless.Config{URL: srv.URL, Token: paperlesstest.Token, CACertificate: ca}, paperless.Options{Dialer: loopback(), PollInterval: time.Millisecond})
	if err := c.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 9}, io.LimitReader(bytes.NewReader(pdf("tls")), 9)); err != nil {
		t.Fatal(err)
	}
}
