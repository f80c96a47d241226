package pdfsafe

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"docflow/internal/corpus"
)

var lines = []string{"This document runs scripts when it is opened.", "Its text must survive the cleaning."}

// TestRewriteRemovesActiveContent: every kind of active content goes,
// text and the web link stay, and poppler finds no JavaScript left.
func TestRewriteRemovesActiveContent(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo", "pdftotext")
	dir := t.TempDir()
	in := filepath.Join(dir, "active.pdf")
	if err := os.WriteFile(in, corpus.ActiveContentPDF(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	if info := pdfinfo(t, in); !strings.Contains(info, "JavaScript:      yes") {
		t.Fatalf("the sample carries no JavaScript for poppler:\n%s", info)
	}
	found, err := Inspect(bytes.NewReader(corpus.ActiveContentPDF(lines)))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"OpenAction", "document JavaScript", "additional actions", "Launch action", "JavaScript action"} {
		if found[kind] == 0 {
			t.Errorf("inspection missed %s: %v", kind, found)
		}
	}

	out := filepath.Join(dir, "clean.pdf")
	removed, err := Rewrite(context.Background(), in, out, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed: %s", removed)
	if removed.String() != found.String() {
		t.Fatalf("removed %s, inspection found %s", removed, found)
	}
	if info := pdfinfo(t, out); !strings.Contains(info, "JavaScript:      no") || !strings.Contains(info, "Pages:           1") {
		t.Fatalf("cleaned:\n%s", info)
	}
	b, _ := os.ReadFile(out)
	again, err := Inspect(bytes.NewReader(b))
	if err != nil || len(again) != 0 {
		t.Fatalf("cleaned PDF inspected: %v, %v", again, err)
	}
	text, _ := exec.Command("pdftotext", out, "-").Output()
	if !strings.Contains(string(text), lines[1]) {
		t.Fatalf("text lost: %q", text)
	}
	if urls, _ := exec.Command("pdfinfo", "-url", out).Output(); !strings.Contains(string(urls), "https://example.com/") {
		t.Fatalf("the web link was removed: %s", urls)
	}

	// A PDF without active content comes out with nothing removed.
	plain := filepath.Join(dir, "plain.pdf")
	corpus.WriteTextPDF(plain, [][]string{lines})
	removed, err = Rewrite(context.Background(), plain, filepath.Join(dir, "plain-out.pdf"), time.Minute)
	if err != nil || len(removed) != 0 {
		t.Fatalf("plain PDF: %v, %v", removed, err)
	}
}

// TestRewriteThroughPoppler: a PDF that pdfcpu refuses but poppler reads
// is redrawn by pdftocairo, without its scripts.
func TestRewriteThroughPoppler(t *testing.T) {
	corpus.RequireTools(t, "pdfinfo", "pdftocairo", "pdftotext")
	dir := t.TempDir()
	b := brokenActivePDF()
	in := filepath.Join(dir, "broken.pdf")
	os.WriteFile(in, b, 0o644)
	if _, err := Inspect(bytes.NewReader(b)); err == nil {
		t.Fatal("pdfcpu reads the damaged sample")
	}
	if info := pdfinfo(t, in); !strings.Contains(info, "JavaScript:      yes") {
		t.Fatalf("the sample carries no JavaScript for poppler:\n%s", info)
	}
	out := filepath.Join(dir, "clean.pdf")
	removed, err := Rewrite(context.Background(), in, out, time.Minute)
	if err != nil || len(removed) == 0 {
		t.Fatalf("%v, %v", removed, err)
	}
	if info := pdfinfo(t, out); !strings.Contains(info, "JavaScript:      no") {
		t.Fatalf("cleaned:\n%s", info)
	}
	if text, _ := exec.Command("pdftotext", out, "-").Output(); !strings.Contains(string(text), lines[0]) {
		t.Fatalf("text lost: %q", text)
	}
}

// brokenActivePDF is corpus.ActiveContentPDF with a name tree keyed by a
// name instead of a string: pdfcpu's validation refuses it, poppler reads
// the document.
func brokenActivePDF() []byte {
	return bytes.Replace(corpus.ActiveContentPDF(lines), []byte("/Names [(init)"), []byte("/Names [/init "), 1)
}

func pdfinfo(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("pdfinfo", path).CombinedOutput()
	if err != nil {
		t.Fatalf("pdfinfo: %v: %s", err, out)
	}
	return string(out)
}
