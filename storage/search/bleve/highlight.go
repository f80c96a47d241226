package bleve

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// Highlighting is done here rather than with bleve's highlighter for two
// reasons: bleve's HTML fragment formatter inserts <mark> into the raw text
// without escaping the document's own HTML, and it needs term vectors for every
// document in the index, while re-analysing the stored text of one page of
// hits costs microseconds.

const (
	markOpen  = "<mark>"
	markClose = "</mark>"
	// fragmentBytes is the approximate size of the ocr_text excerpt.
	fragmentBytes = 240
	// leadBytes is how much text precedes the first match in the excerpt.
	leadBytes = 60
	ellipsis  = "…"
)

// queryTerms is the set of analysed terms of a query.
func queryTerms(an analysis.Analyzer, text string) map[string]struct{} {
	terms := make(map[string]struct{})
	for _, tok := range an.Analyze([]byte(text)) {
		terms[string(tok.Term)] = struct{}{}
	}
	return terms
}

// matchSpans returns the byte ranges of text whose analysed terms are in
// terms, in order.
func matchSpans(an analysis.Analyzer, text string, terms map[string]struct{}) [][2]int {
	if len(terms) == 0 || text == "" {
		return nil
	}
	var spans [][2]int
	for _, tok := range an.Analyze([]byte(text)) {
		if _, ok := terms[string(tok.Term)]; ok {
			spans = append(spans, [2]int{tok.Start, tok.End})
		}
	}
	return spans
}

// markSpans escapes text[start:end] and wraps the spans inside it in <mark>.
func markSpans(text string, spans [][2]int, start, end int) string {
	var b strings.Builder
	b.Grow(end - start + 32)
	pos := start
	for _, sp := range spans {
		if sp[0] < pos || sp[1] > end {
			continue
		}
		b.WriteString(html.EscapeString(text[pos:sp[0]]))
		b.WriteString(markOpen)
		b.WriteString(html.EscapeString(text[sp[0]:sp[1]]))
		b.WriteString(markClose)
		pos = sp[1]
	}
	b.WriteString(html.EscapeString(text[pos:end]))
	return b.String()
}

// highlightWhole returns the whole text escaped with matches marked (titles).
func highlightWhole(an analysis.Analyzer, text string, terms map[string]struct{}) string {
	return markSpans(text, matchSpans(an, text, terms), 0, len(text))
}

// highlightFragment returns an excerpt of about fragmentBytes around the
// first match (or the beginning when nothing matches), escaped, with matches
// marked and an ellipsis where text was cut.
func highlightFragment(an analysis.Analyzer, text string, terms map[string]struct{}) string {
	if len(text) <= fragmentBytes {
		return highlightWhole(an, text, terms)
	}
	spans := matchSpans(an, text, terms)
	start := 0
	if len(spans) > 0 && spans[0][0] > leadBytes {
		start = wordStartAfter(text, spans[0][0]-leadBytes, spans[0][0])
	}
	end := start + fragmentBytes
	if len(spans) > 0 && end < spans[0][1] {
		end = spans[0][1]
	}
	if end >= len(text) {
		end = len(text)
	} else {
		floor := start
		if len(spans) > 0 {
			floor = spans[0][1]
		}
		end = wordEndBefore(text, end, floor)
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString(ellipsis)
	}
	b.WriteString(strings.TrimSpace(markSpans(text, spans, start, end)))
	if end < len(text) {
		b.WriteString(ellipsis)
	}
	return b.String()
}

// wordStartAfter moves i forward to the start of the next word, not past
// limit, so an excerpt does not begin mid-word.
func wordStartAfter(text string, i, limit int) int {
	for i < limit && !utf8.RuneStart(text[i]) {
		i++
	}
	for j := i; j < limit; {
		r, n := utf8.DecodeRuneInString(text[j:])
		j += n
		if unicode.IsSpace(r) {
			return j
		}
	}
	return i
}

// wordEndBefore moves i back to the end of the previous word, not before
// floor, so an excerpt does not end mid-word.
func wordEndBefore(text string, i, floor int) int {
	for i > floor && !utf8.RuneStart(text[i]) {
		i--
	}
	for j := i; j > floor; {
		r, n := utf8.DecodeLastRuneInString(text[:j])
		if unicode.IsSpace(r) {
			return j - n
		}
		j -= n
	}
	return i
}
