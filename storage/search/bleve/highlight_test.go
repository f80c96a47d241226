package bleve

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

func analyzer(t *testing.T) analysis.Analyzer {
	t.Helper()
	m, err := newMapping()
	if err != nil {
		t.Fatal(err)
	}
	return m.AnalyzerNamed(textAnalyzer)
}

func TestHighlightWhole(t *testing.T) {
	an := analyzer(t)
	terms := queryTerms(an, "Rechnung")
	for in, want := range map[string]string{
		"Ihre Rechnung":               "Ihre <mark>Rechnung</mark>",
		"<b>RECHNUNG</b> & Co":        "&lt;b&gt;<mark>RECHNUNG</mark>&lt;/b&gt; &amp; Co",
		`"rechnung" rechnungen's`:     "&#34;<mark>rechnung</mark>&#34; rechnungen&#39;s",
		"":                            "",
		"no match <script>x</script>": "no match &lt;script&gt;x&lt;/script&gt;",
	} {
		if got := highlightWhole(an, in, terms); got != want {
			t.Errorf("highlightWhole(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHighlightFragment(t *testing.T) {
	an := analyzer(t)
	terms := queryTerms(an, "needle")
	long := strings.Repeat("hay stack ", 100)
	for _, tc := range []struct {
		name, text string
		check      func(string) bool
	}{
		{"match deep inside", long + "the <needle> & " + long, func(s string) bool {
			return strings.HasPrefix(s, "…") && strings.HasSuffix(s, "…") &&
				strings.Contains(s, "&lt;<mark>needle</mark>&gt; &amp;")
		}},
		{"match at start", "needle " + long, func(s string) bool {
			return strings.HasPrefix(s, "<mark>needle</mark>") && strings.HasSuffix(s, "…")
		}},
		{"match at end", long + "needle", func(s string) bool {
			return strings.HasPrefix(s, "…") && strings.HasSuffix(s, "<mark>needle</mark>")
		}},
		{"no match", "<i>" + long, func(s string) bool {
			return strings.HasPrefix(s, "&lt;i&gt;hay") && strings.HasSuffix(s, "…") && !strings.Contains(s, "<mark>")
		}},
		{"multibyte text", strings.Repeat("äöü ", 200) + "needle " + strings.Repeat("äöü ", 200), func(s string) bool {
			return utf8.ValidString(s) && strings.Contains(s, "<mark>needle</mark>")
		}},
		{"no spaces", strings.Repeat("ä", 300) + " needle " + strings.Repeat("ß", 300), func(s string) bool {
			return utf8.ValidString(s) && strings.Contains(s, "<mark>needle</mark>")
		}},
		{"substring is not a match", long + "needles and needle's " + long + " NEEDLE " + long, func(s string) bool {
			return strings.Contains(s, "<mark>NEEDLE</mark>") && !strings.Contains(s, "needles")
		}},
		{"match past the first chunk", strings.Repeat("hay ", 10_000) + "Needle " + long, func(s string) bool {
			return strings.Contains(s, "<mark>Needle</mark>")
		}},
		{"length-changing lower case", "\u0130stanbul " + long + " needle " + long, func(s string) bool {
			return strings.Contains(s, "<mark>needle</mark>")
		}},
	} {
		got := highlightFragment(an, tc.text, terms)
		if !tc.check(got) {
			t.Errorf("%s: fragment %q", tc.name, got)
		}
		if len(got) > 3*fragmentBytes {
			t.Errorf("%s: fragment is %d bytes", tc.name, len(got))
		}
	}
}
