package pdfmeta

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"docflow"
	"docflow/internal/corpus"
	"docflow/processing/pdfsafe"
)

func TestEmbed(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pdf")
	if err := corpus.WriteTextPDF(in, [][]string{{"Rechnung"}, {"Seite 2"}}); err != nil {
		t.Fatal(err)
	}
	m := &docflow.Metadata{Title: "Rechnung März – ACME GmbH", Sender: "ACME GmbH", Date: "2024-03-15", DocumentType: "invoice", Tags: []string{"invoice", "beratung", "2024"}}
	cls := &docflow.Classification{Category: "invoice", Label: "Invoice", Confidence: 90}
	p := FromMetadata(m, cls)
	if p.Subject != "Invoice from ACME GmbH, 2024-03-15" || p.Author != "ACME GmbH" || len(p.Keywords) != 3 {
		t.Fatalf("properties %+v", p)
	}
	// In place: in == out.
	if err := Embed(context.Background(), in, in, p); err != nil {
		t.Fatal(err)
	}
	got, err := Read(in)
	if err != nil {
		t.Fatal(err)
	}
	if got["Title"] != m.Title || got["Author"] != "ACME GmbH" || got["Subject"] != p.Subject || !strings.Contains(got["Keywords"], "beratung") {
		t.Fatalf("read back %v", got)
	}
	if _, err := exec.LookPath("pdfinfo"); err == nil {
		out, err := exec.Command("pdfinfo", "-enc", "UTF-8", in).Output()
		if err != nil {
			t.Fatal(err)
		}
		s := string(out)
		if !strings.Contains(s, "Rechnung März – ACME GmbH") || !strings.Contains(s, "Pages:           2") {
			t.Fatalf("pdfinfo:\n%s", s)
		}
	}
}

func TestEmbedRefusesUnreadable(t *testing.T) {
	dir := t.TempDir()
	for name, write := range map[string]func(string) error{
		"corrupt.pdf":   corpus.WriteCorruptPDF,
		"encrypted.pdf": func(p string) error { return corpus.WriteEncryptedPDF(p, "pw") },
	} {
		p := filepath.Join(dir, name)
		if err := write(p); err != nil {
			t.Fatal(err)
		}
		err := Embed(context.Background(), p, filepath.Join(dir, "out.pdf"), Properties{Title: "x"})
		if docflow.ErrorCode(err) != docflow.EINVALID {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSidecar(t *testing.T) {
	m := &docflow.Metadata{Title: "T", Tags: []string{"a"}, Amount: "12.00", Currency: "EUR"}
	b, err := SidecarJSON(m, &docflow.Classification{Category: "receipt", Label: "Receipt", Confidence: 70, MatchedRules: []string{"r"}}, map[string]any{"file_id": 7})
	if err != nil {
		t.Fatal(err)
	}
	var back Sidecar
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Version != 1 || back.Metadata.Title != "T" || back.Classification.Category != "receipt" || back.Extra["file_id"].(float64) != 7 {
		t.Fatalf("%s", b)
	}
}

// TestEmbedRemovesActiveContent: the PDF written carries the properties
// and none of the input's scripts and actions.
func TestEmbedRemovesActiveContent(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "active.pdf")
	if err := os.WriteFile(in, corpus.ActiveContentPDF([]string{"Rechnung"}), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.pdf")
	if err := Embed(context.Background(), in, out, Properties{Title: "Rechnung"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if found, err := pdfsafe.Inspect(bytes.NewReader(b)); err != nil || len(found) > 0 {
		t.Fatalf("active content left: %v, %v", found, err)
	}
	if got, _ := Read(out); got["Title"] != "Rechnung" {
		t.Fatalf("properties %v", got)
	}
}
