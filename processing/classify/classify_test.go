package classify

import (
	"regexp"
	"testing"

	"docflow"
)

func rule(name, cat, typ, pattern string, prio int) *docflow.ClassificationRule {
	owner := "alice"
	return &docflow.ClassificationRule{Name: name, OwnerID: &owner, Category: cat, RuleType: typ, Pattern: pattern, Priority: prio, Enabled: true}
}

func TestBuiltinCategories(t *testing.T) {
	cases := []struct {
		text, filename, want string
	}{
		{"INVOICE\nInvoice number: 2024-001\nAmount due: 120.00 EUR\nDue date: 2024-04-01", "scan.pdf", "invoice"},
		{"Rechnung\nRechnungsnummer RE-77\nZahlbar bis 01.04.2024, MwSt 19 %", "doc.pdf", "invoice"},
		{"Gehaltsabrechnung März 2024\nBruttolohn 4.000,00\nNettolohn 2.600,00\nLohnsteuer 500", "x.pdf", "payslip"},
		{"Kontoauszug Nr. 3\nAlter Saldo 1.000,00\nNeuer Saldo 900,00", "x.pdf", "bank_statement"},
		{"Sehr geehrte Frau Müller,\nwir bestätigen den Eingang.\nMit freundlichen Grüßen", "x.pdf", "letter"},
		{"Einkommensteuerbescheid 2023\nFinanzamt Köln\nSteuernummer 123/456", "x.pdf", "tax_document"},
		{"Versicherungsschein\nVersicherungsnummer 55\nVersicherungsnehmer: Max", "x.pdf", "insurance"},
		{"Service Agreement\nThis agreement between the contracting parties ... governing law", "x.pdf", "contract"},
		{"Receipt\nSubtotal 9.00\nCash 10.00\nThank you for your purchase", "x.pdf", "receipt"},
		{"Quarterly Report\nExecutive summary\nFindings and recommendations", "x.pdf", "report"},
		{"nothing to see here", "holiday.jpg", "unknown"},
	}
	for _, c := range cases {
		got := Classify(c.text, c.filename, nil, nil, true)
		if got.Category != c.want {
			t.Errorf("Classify(%q) = %s (%v), want %s", c.text, got.Category, got.MatchedRules, c.want)
		}
		if got.Label != Label(c.want) {
			t.Errorf("label %q, want %q", got.Label, Label(c.want))
		}
	}
}

func TestConfidenceSemantics(t *testing.T) {
	// One filename match: 60.
	got := Classify("", "Rechnung_2024.pdf", nil, nil, true)
	if got.Category != "invoice" || got.Confidence != 60 {
		t.Fatalf("filename only: %+v", got)
	}
	// Filename + keyword + vocabulary: best 70 + 2*10 = 90.
	got = Classify("Invoice, amount due", "invoice.pdf", nil, nil, true)
	if got.Category != "invoice" || got.Confidence != 90 || len(got.MatchedRules) != 3 {
		t.Fatalf("three matches: %+v", got)
	}
	// Metadata 90 + content 70 + filename 60 + vocabulary: capped at 100.
	rules := []*docflow.ClassificationRule{rule("meta", "invoice", docflow.RuleMetadataMatch, "document_type=Invoice", 5)}
	got = Classify("Invoice, amount due", "invoice.pdf", map[string]any{"document_type": "invoice"}, rules, true)
	if got.Confidence != 100 || got.MatchedRules[0] != "meta" {
		t.Fatalf("capped: %+v", got)
	}
	// No match.
	got = Classify("", "", nil, nil, false)
	if got.Category != "unknown" || got.Confidence != 0 || got.MatchedRules == nil {
		t.Fatalf("no match: %+v", got)
	}
}

func TestMostMatchesThenSummedConfidence(t *testing.T) {
	rules := []*docflow.ClassificationRule{
		rule("a1", "alpha", docflow.RuleContentKeyword, "foo", 0),
		rule("a2", "alpha", docflow.RuleFilenamePattern, `\.pdf$`, 0),
		rule("b1", "beta", docflow.RuleMetadataMatch, "sender=ACME", 0),
	}
	got := Classify("foo", "x.pdf", map[string]any{"sender": "acme"}, rules, false)
	if got.Category != "alpha" || got.Confidence != 80 {
		t.Fatalf("most matches should win: %+v", got)
	}
	// Tie on count (1 each): metadata 90 beats content 70.
	got = Classify("foo", "x.txt", map[string]any{"sender": "acme"}, rules, false)
	if got.Category != "beta" || got.Confidence != 90 {
		t.Fatalf("tie to summed confidence: %+v", got)
	}
	// Disabled rule ignored; case-sensitive respected.
	rules[2].Enabled = false
	cs := rule("cs", "gamma", docflow.RuleContentKeyword, "FOO", 0)
	cs.CaseSensitive = true
	got = Classify("foo", "x.txt", nil, append(rules, cs), false)
	if got.Category != "alpha" {
		t.Fatalf("disabled/case-sensitive: %+v", got)
	}
	// Tags list matches any element.
	tag := rule("t", "delta", docflow.RuleMetadataMatch, "tags=urgent", 0)
	got = Classify("", "", map[string]any{"tags": []any{"x", "Urgent"}}, []*docflow.ClassificationRule{tag}, false)
	if got.Category != "delta" {
		t.Fatalf("tags: %+v", got)
	}
}

func TestBuiltinWordStart(t *testing.T) {
	// "rechnung" inside "Abrechnung" must not make a payslip an invoice.
	got := Classify("Abrechnung", "", nil, nil, true)
	if got.Category != "unknown" {
		t.Fatalf("got %+v", got)
	}
}

func TestValidateRule(t *testing.T) {
	ok := rule("n", "invoice", docflow.RuleFilenamePattern, `^inv_\d+`, 10)
	if err := docflow.CheckClassificationRule(ok); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		r    *docflow.ClassificationRule
		code string
	}{
		{rule("n", "invoice", "magic", "x", 0), docflow.EBADREQUEST},
		{rule("n", "invoice", docflow.RuleFilenamePattern, "([a-", 0), docflow.EINVALID},
		{rule("n", "invoice", docflow.RuleMetadataMatch, "noequals", 0), docflow.EINVALID},
		{rule("n", "invoice", docflow.RuleMetadataMatch, "=value", 0), docflow.EINVALID},
		{rule("n", "invoice", docflow.RuleContentKeyword, " | ", 0), docflow.EINVALID},
		{rule("n", "invoice", docflow.RuleContentKeyword, "a", 1001), docflow.EINVALID},
		{rule("n", "invoice", docflow.RuleContentKeyword, "a", -1), docflow.EINVALID},
		{rule("", "invoice", docflow.RuleContentKeyword, "a", 0), docflow.EINVALID},
	}
	for i, c := range cases {
		err := docflow.CheckClassificationRule(c.r)
		if got := docflow.ErrorCode(err); got != c.code {
			t.Errorf("case %d: code %q (%v), want %q", i, got, err, c.code)
		}
	}
	for _, r := range BuiltinRules() {
		if err := docflow.CheckClassificationRule(r); err != nil {
			t.Errorf("builtin %s: %v", r.Name, err)
		}
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("Invoice amount due", "invoice.pdf", "([a-", "a=b")
	f.Fuzz(func(t *testing.T, text, filename, regex, meta string) {
		rules := []*docflow.ClassificationRule{
			rule("r", "c", docflow.RuleFilenamePattern, regex, 0),
			rule("m", "c", docflow.RuleMetadataMatch, meta, 0),
			rule("k", "c", docflow.RuleContentKeyword, regex, 0),
		}
		got := Classify(text, filename, map[string]any{"a": "b"}, rules, true)
		if got.Confidence < 0 || got.Confidence > 100 || got.Category == "" {
			t.Fatalf("bad result %+v", got)
		}
	})
}

// FuzzClassifyRule: a rule the catalogue's check accepts is one the
// classifier uses: alone, it classifies as its category a document that
// has its first keyword, its metadata field and value, or (its pattern
// taken literally) a file named as its pattern; and a rule the check
// refuses never counts. Seeds in testdata/fuzz/FuzzClassifyRule.
func FuzzClassifyRule(f *testing.F) {
	f.Add("content_keyword", " Rechnung | invoice ", "invoice", false)
	f.Add("metadata_match", " vendor = ACME ", "c", true)
	f.Add("filename_pattern", "scan(1).PDF", "c", false)
	f.Add("filename_pattern", "(", "c", false)
	f.Add("content_keyword", "İ", "c", false)
	f.Fuzz(func(t *testing.T, typ, pattern, category string, caseSensitive bool) {
		r := rule("r", category, typ, pattern, 0)
		r.CaseSensitive = caseSensitive
		var text, filename string
		var meta map[string]any
		if docflow.CheckClassificationRule(r) != nil {
			got := Classify(pattern, pattern, map[string]any{pattern: pattern}, []*docflow.ClassificationRule{r}, false)
			if got.Category != Unknown || len(got.MatchedRules) != 0 {
				t.Fatalf("refused rule %+v counted: %+v", r, got)
			}
			return
		}
		switch typ {
		case docflow.RuleContentKeyword:
			text = docflow.ClassificationKeywords(pattern, true)[0]
		case docflow.RuleMetadataMatch:
			field, value, _ := docflow.SplitMetadataPattern(pattern)
			meta = map[string]any{field: value}
		case docflow.RuleFilenamePattern:
			filename = pattern
			r.Pattern = regexp.QuoteMeta(pattern)
			if docflow.CheckClassificationRule(r) != nil {
				return // quoting made it too long
			}
		}
		got := Classify(text, filename, meta, []*docflow.ClassificationRule{r}, false)
		if got.Category != category || len(got.MatchedRules) != 1 {
			t.Fatalf("%+v on text %q, file %q, metadata %v: %+v", r, text, filename, meta, got)
		}
	})
}
