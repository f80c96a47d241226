package docflow

import (
	"context"
	"errors"
	"testing"
)

// TestRoutingRuleMatches covers the matching rules of decisions.md:
// case-insensitive strings, regex as a case-insensitive full match,
// numeric gt/gte/lt/lte, and a missing field matching only the negations.
func TestRoutingRuleMatches(t *testing.T) {
	size := int64(2048)
	in := RoutingInput{FileType: "pdf", MimeType: "application/pdf", Filename: "Invoice-42.PDF", Size: &size,
		DocumentType: "Invoice", Category: "invoice",
		Metadata: map[string]any{"sender": "ACME GmbH", "tags": []any{"tax", "2024"}, "amount": 12.5, "empty": nil}}
	for _, tc := range []struct {
		field, op, value string
		want             bool
	}{
		{"filename", "equals", "invoice-42.pdf", true},
		{"filename", "equals", "invoice-42", false},
		{"filename", "not_equals", "INVOICE-42.pdf", false},
		{"filename", "contains", "VOICE", true},
		{"filename", "not_contains", "receipt", true},
		{"filename", "regex", `inv\w+-\d+\.pdf`, true},
		{"filename", "regex", `invoice`, false}, // a full match, not a search
		{"filename", "regex", `(`, false},       // an invalid pattern matches nothing
		{"file_type", "equals", "PDF", true},
		{"file_type", "equals", ".pdf", true},
		{"file_type", "equals", "application/PDF", true},
		{"file_type", "not_equals", "application/pdf", false},
		{"file_type", "equals", "docx", false},
		{"size", "gt", "2047", true},
		{"size", "gt", "2048", false},
		{"size", "gte", "2048", true},
		{"size", "lt", "4096.5", true},
		{"size", "lte", "2047", false},
		{"size", "gt", "many", false},
		{"document_type", "equals", "invoice", true},
		{"category", "contains", "voic", true},
		{"metadata.sender", "contains", "acme", true},
		{"metadata.tags", "equals", "tax,2024", true},
		{"metadata.amount", "gte", "12.5", true},
		{"metadata.amount", "lt", "12", false},
		// Missing fields: only the negations match.
		{"metadata.missing", "equals", "", false},
		{"metadata.missing", "not_equals", "x", true},
		{"metadata.missing", "not_contains", "x", true},
		{"metadata.empty", "contains", "", false},
		{"metadata.empty", "not_equals", "", true},
		{"unknown_field", "not_contains", "x", true},
		{"unknown_field", "regex", ".*", false},
		{"filename", "no_such_operator", "x", false},
	} {
		r := &RoutingRule{Field: tc.field, Operator: tc.op, Value: tc.value}
		if got := r.Matches(in); got != tc.want {
			t.Errorf("%s %s %q: %v, want %v", tc.field, tc.op, tc.value, got, tc.want)
		}
	}
	noSize := RoutingInput{Filename: "a.txt"}
	if (&RoutingRule{Field: "size", Operator: "lt", Value: "1"}).Matches(noSize) {
		t.Error("a missing size compared as a number")
	}
}

// TestMatchRules checks the order (the first matching rule wins) and the
// rules skipped for their pipeline: deleted or inactive.
func TestMatchRules(t *testing.T) {
	ctx := context.Background()
	in := RoutingInput{Filename: "invoice.pdf", FileType: "pdf"}
	rule := func(id, target int64, value string) *RoutingRule {
		return &RoutingRule{ID: id, Name: value, Field: "filename", Operator: "contains", Value: value, TargetPipelineID: target}
	}
	pipelines := map[int64]*Pipeline{1: {ID: 1, IsActive: true}, 2: {ID: 2, IsActive: false}, 3: {ID: 3, IsActive: true}}
	boom := errors.New("database down")
	find := func(_ context.Context, id int64) (*Pipeline, error) {
		if id == 99 {
			return nil, boom
		}
		if p := pipelines[id]; p != nil {
			return p, nil
		}
		return nil, Errorf(ENOTFOUND, "Pipeline not found")
	}
	for _, tc := range []struct {
		name     string
		rules    []*RoutingRule
		wantRule int64 // 0: none
		wantErr  error
	}{
		{"first match wins", []*RoutingRule{rule(1, 1, "receipt"), rule(2, 1, "invoice"), rule(3, 3, "pdf")}, 2, nil},
		{"deleted pipeline skipped", []*RoutingRule{rule(1, 42, "invoice"), rule(2, 3, "pdf")}, 2, nil},
		{"inactive pipeline skipped", []*RoutingRule{rule(1, 2, "invoice"), rule(2, 1, "invoice")}, 2, nil},
		{"none matches", []*RoutingRule{rule(1, 1, "receipt")}, 0, nil},
		{"only unusable pipelines", []*RoutingRule{rule(1, 2, "invoice"), rule(2, 42, "invoice")}, 0, nil},
		{"no rules", nil, 0, nil},
		{"lookup error", []*RoutingRule{rule(1, 99, "invoice"), rule(2, 1, "invoice")}, 0, boom},
		{"non-matching rule's pipeline not looked up", []*RoutingRule{rule(1, 99, "receipt"), rule(2, 1, "invoice")}, 2, nil},
	} {
		r, p, err := MatchRules(ctx, tc.rules, in, find)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.wantErr)
			continue
		}
		switch {
		case tc.wantRule == 0 && (r != nil || p != nil):
			t.Errorf("%s: matched rule %v pipeline %v, want none", tc.name, r, p)
		case tc.wantRule != 0 && (r == nil || r.ID != tc.wantRule || p == nil || p.ID != r.TargetPipelineID):
			t.Errorf("%s: matched rule %v pipeline %v, want rule %d", tc.name, r, p, tc.wantRule)
		}
	}
}
