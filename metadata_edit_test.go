package docflow

import (
	"slices"
	"testing"
)

func sp(s string) *string { return &s }

func TestMetadataEditChecksAndNormalises(t *testing.T) {
	tags := []string{" Tax ", "tax", "", "2026"}
	e := MetadataEdit{Title: sp("  Invoice 7 "), DocumentDate: sp("2026-02-28"), Tags: &tags, Correspondent: sp("ACME"),
		DocumentType: sp("Bank-Statement  x"), Fields: map[string]string{"amount": "1,234.5", "currency": "eur",
			"iban": "de89 3704 0044 0532 0130 00", "language": "DE", "reference_number": "R-1"}}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	if *e.Title != "Invoice 7" || !slices.Equal(*e.Tags, []string{"tax", "2026"}) || *e.DocumentType != "bank_statement_x" ||
		e.Fields["amount"] != "1234.50" || e.Fields["currency"] != "EUR" || e.Fields["iban"] != "DE89370400440532013000" || e.Fields["language"] != "de" {
		t.Errorf("normalised: %+v %v %v", e, *e.Tags, e.Fields)
	}
}

func TestMetadataEditNamesEveryBadField(t *testing.T) {
	long := make([]byte, 201)
	for i := range long {
		long[i] = 'x'
	}
	e := MetadataEdit{Title: sp(string(long)), DocumentDate: sp("2026-02-30"), Correspondent: sp("a\nb"),
		DocumentType: sp("in/voice"), Fields: map[string]string{"iban": "DE00", "amount": "1/2", "currency": "EURO", "language": "eng",
			"classification": "x"}}
	err := e.Check()
	var got []string
	if e, ok := err.(*Error); ok {
		for _, f := range e.Fields {
			got = append(got, f.Field)
		}
	}
	want := []string{"title", "correspondent", "document_date", "document_type", "ai_metadata.amount", "ai_metadata.classification",
		"ai_metadata.currency", "ai_metadata.iban", "ai_metadata.language"}
	if ErrorCode(err) != EINVALID || !slices.Equal(got, want) {
		t.Errorf("fields %v (%v), want %v", got, err, want)
	}
}

func TestMetadataEditApplyReportsWhatChanged(t *testing.T) {
	title := "Old"
	f := &File{DocumentTitle: &title, AIMetadata: map[string]any{"title": "Old", "tags": []any{"a"}, "sender": "X", "classification": "keep"}}
	tags := []string{"a"}
	e := MetadataEdit{Title: sp("New"), Tags: &tags, Correspondent: sp(""), Fields: map[string]string{"amount": "2.00"}}
	if err := e.Check(); err != nil {
		t.Fatal(err)
	}
	changed := e.Apply(f)
	if !slices.Equal(changed, []string{"title", "correspondent", "ai_metadata.amount"}) {
		t.Errorf("changed %v", changed)
	}
	if *f.DocumentTitle != "New" || f.AIMetadata["title"] != "New" || f.AIMetadata["sender"] != nil || f.AIMetadata["amount"] != "2.00" ||
		f.AIMetadata["classification"] != "keep" {
		t.Errorf("file after the edit: %v %v", *f.DocumentTitle, f.AIMetadata)
	}
	if again := e.Apply(f); len(again) != 0 {
		t.Errorf("the same edit again changed %v", again)
	}
}
