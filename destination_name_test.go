package docflow

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestRenderFilename(t *testing.T) {
	f := FilenameFields{ID: 42, Title: "Invoice ACME", Date: "2026-11-29", Category: "invoice",
		OriginalFilename: "scan 7.pdf", Ext: ".pdf"}
	for _, tc := range []struct {
		tmpl string
		f    func(*FilenameFields)
		want string
	}{
		{"", nil, "scan 7.pdf"},
		{"{original_filename}", nil, "scan 7.pdf"},
		{"{date} {title}", nil, "2026-11-29 Invoice ACME.pdf"},
		{"{category}_{id}.pdf", nil, "invoice_42.pdf"},
		{"{title}.PDF", nil, "Invoice ACME.PDF"},
		{"{title}", func(f *FilenameFields) { f.Title = "Q3 report v2.1" }, "Q3 report v2.1.pdf"},
		// A value cannot leave the folder.
		{"{title}", func(f *FilenameFields) { f.Title = "../../etc/passwd" }, "-.-etc-passwd.pdf"},
		{"{title}", func(f *FilenameFields) { f.Title = "/abs/path" }, "-abs-path.pdf"},
		{"{title}", func(f *FilenameFields) { f.Title = `C:\Windows\x` }, "C:-Windows-x.pdf"},
		{"{title}", func(f *FilenameFields) { f.Title = ".." }, "document-42.pdf"},
		{"{title}", func(f *FilenameFields) { f.Title = "" }, "document-42.pdf"},
		{"{title}", func(f *FilenameFields) { f.Title = "a\x00b\nc\u202Ed" }, "a b c d.pdf"},
		{"{title}{unknown}", nil, "Invoice ACME{unknown}.pdf"},
		{"{title}", func(f *FilenameFields) { f.Title = strings.Repeat("x", 400) }, strings.Repeat("x", 251) + ".pdf"},
		{"{original_filename}", func(f *FilenameFields) { f.OriginalFilename, f.Ext = "notes", "" }, "notes"},
	} {
		ff := f
		if tc.f != nil {
			tc.f(&ff)
		}
		got := RenderFilename(tc.tmpl, ff)
		if got != tc.want {
			t.Errorf("%q with %+v: %q, want %q", tc.tmpl, ff, got, tc.want)
		}
		if err := CheckDestinationName(got); err != nil {
			t.Errorf("%q: %v", got, err)
		}
	}
}

func FuzzRenderFilename(f *testing.F) {
	for _, s := range []string{"../../x", "/", "..", "a/b\\c", "\u202E", "CON", strings.Repeat("é", 200)} {
		f.Add("{title} {original_filename}", s, s)
	}
	f.Fuzz(func(t *testing.T, tmpl, title, orig string) {
		if checkTemplate(tmpl) != "" {
			return
		}
		name := RenderFilename(tmpl, FilenameFields{ID: 1, Title: title, OriginalFilename: orig, Ext: ".pdf"})
		if err := CheckDestinationName(name); err != nil {
			t.Fatalf("%q %q %q → %q: %v", tmpl, title, orig, name, err)
		}
		if strings.Contains(name, "..") || strings.HasPrefix(name, ".") {
			t.Fatalf("%q", name)
		}
	})
}

func TestCheckDestinationName(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a\x00", "a\nb", strings.Repeat("x", 256)} {
		if CheckDestinationName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, ok := range []string{"a.pdf", "Rechnung März (1).pdf", "..x", "日本.pdf"} {
		if err := CheckDestinationName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

func TestDestFailHTTP(t *testing.T) {
	for status, want := range map[int]DestinationFailure{401: DestAuth, 403: DestForbidden, 429: DestRateLimited,
		507: DestFull, 413: DestInvalid, 400: DestInvalid, 423: DestUnavailable, 500: DestUnavailable, 503: DestUnavailable} {
		if got := DestFailHTTP(status, "x", 0, nil).Class; got != want {
			t.Errorf("%d: %s, want %s", status, got, want)
		}
	}
	if got := DestFailHTTP(503, "x", 5, nil).Class; got != DestRateLimited {
		t.Errorf("503 with Retry-After: %s", got)
	}
}

type fakeDest struct {
	connect, probe error
	closed         bool
}

func (f *fakeDest) Connect(context.Context) error { return f.connect }
func (f *fakeDest) Close(context.Context) error   { f.closed = true; return nil }
func (f *fakeDest) Deliver(context.Context, DestinationDoc, io.Reader) (string, error) {
	return "", nil
}
func (f *fakeDest) Probe(context.Context) error { return f.probe }
func (f *fakeDest) Location() string            { return "bucket b" }

func TestDestinationTesterMessages(t *testing.T) {
	in := &Integration{IntegrationType: IntegrationS3}
	run := func(f *fakeDest, newErr error) (bool, string) {
		var logged error
		ok, msg := DestinationTester{New: func(*Integration) (DestinationClient, error) {
			if newErr != nil {
				return nil, newErr
			}
			return f, nil
		}, Log: func(_ *Integration, err error) { logged = err }}.TestIntegration(context.Background(), in)
		if !ok && newErr == nil && logged == nil {
			t.Errorf("failure not logged: %s", msg)
		}
		return ok, msg
	}
	if ok, msg := run(&fakeDest{}, nil); !ok || msg != "Connected to bucket b, and wrote and removed a test file" {
		t.Error(ok, msg)
	}
	if ok, msg := run(&fakeDest{connect: DestFail(DestAuth, "403 InvalidAccessKeyId", errors.New("x"))}, nil); ok ||
		msg != "Could not connect to bucket b: 403 InvalidAccessKeyId" {
		t.Error(ok, msg)
	}
	if ok, msg := run(&fakeDest{probe: DestFail(DestFull, "", nil)}, nil); ok ||
		msg != "Could not write a test file to bucket b: the destination is full" {
		t.Error(ok, msg)
	}
	if ok, msg := run(nil, errors.New("config.ca_certificate holds no certificate")); ok || msg != "config.ca_certificate holds no certificate" {
		t.Error(ok, msg)
	}
}

// wordyDest probes without writing, as Paperless does.
type wordyDest struct{ fakeDest }

func (*wordyDest) ProbeWords() string { return "the token may add documents" }

func TestDestinationTesterProbeWords(t *testing.T) {
	in := &Integration{IntegrationType: IntegrationPaperless}
	run := func(f *wordyDest) (bool, string) {
		return DestinationTester{New: func(*Integration) (DestinationClient, error) { return f, nil }}.TestIntegration(context.Background(), in)
	}
	if ok, msg := run(&wordyDest{}); !ok || msg != "Connected to bucket b, and the token may add documents" {
		t.Error(ok, msg)
	}
	if ok, msg := run(&wordyDest{fakeDest{probe: DestFail(DestForbidden, "may not add documents", nil)}}); ok ||
		msg != "Could not check the right to write to bucket b: may not add documents" {
		t.Error(ok, msg)
	}
}
