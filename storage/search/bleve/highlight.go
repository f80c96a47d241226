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
//
// NOTE: only the excerpt is analysed. Running the word segmenter over the
// whole text of every hit was most of the CPU of a search; the first match
// is found with a lower-cased substring search instead, and the window is
// analysed exactly. Should the two disagree (a term inside a longer token
// such as "rechnung's"), the whole text is analysed after all.
func highlightFragment(an analysis.Analyzer, text string, terms map[string]struct{}) string {
	if len(text) <= fragmentBytes {
		return highlightWhole(an, text, terms)
	}
	pos, end, res := firstMatch(text, terms)
	if res == matchFound {
		if frag, ok := fragmentAt(an, text, terms, pos, end, true); ok {
			return frag
		}
	}
	if res != matchNone {
		if spans := matchSpans(an, text, terms); len(spans) > 0 {
			frag, _ := fragmentAt(an, text, terms, spans[0][0], spans[0][1], true)
			return frag
		}
	}
	frag, _ := fragmentAt(an, text, terms, 0, 0, false)
	return frag
}

// fragmentAt builds the excerpt around the match at [pos, end) (the
// beginning when found is false). ok is false when found but the analyser
// sees no match in the window.
func fragmentAt(an analysis.Analyzer, text string, terms map[string]struct{}, pos, end int, found bool) (string, bool) {
	start := 0
	if found && pos > leadBytes {
		start = wordStartAfter(text, pos-leadBytes, pos)
	}
	stop := start + fragmentBytes
	if found && stop < end {
		stop = end
	}
	if stop >= len(text) {
		stop = len(text)
	} else {
		floor := start
		if found {
			floor = end
		}
		stop = wordEndBefore(text, stop, floor)
	}
	window := text[start:stop]
	spans := matchSpans(an, window, terms)
	if found && len(spans) == 0 {
		return "", false
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString(ellipsis)
	}
	b.WriteString(strings.TrimSpace(markSpans(window, spans, 0, len(window))))
	if stop < len(text) {
		b.WriteString(ellipsis)
	}
	return b.String(), true
}

const (
	// scanChunk is how much text is lower-cased at a time while looking for
	// the first match, so a match early in a long text is found cheaply.
	scanChunk = 16 << 10
	// maxScan bounds the search for a first match in very long texts; past
	// it the excerpt is the beginning of the text.
	maxScan = 256 << 10
)

type matchResult int

const (
	matchNone matchResult = iota
	matchFound
	matchUnknown // the text must be analysed to tell
)

// firstMatch finds the earliest occurrence of a term as a whole word,
// comparing lower-cased text.
func firstMatch(text string, terms map[string]struct{}) (int, int, matchResult) {
	longest := 0
	for t := range terms {
		longest = max(longest, len(t))
	}
	if longest == 0 {
		return 0, 0, matchNone
	}
	for off := 0; off < len(text) && off < maxScan; {
		end := runeBoundary(text, min(off+scanChunk, len(text)))
		segEnd := runeBoundary(text, min(end+longest+utf8.UTFMax, len(text)))
		seg := text[off:segEnd]
		low := strings.ToLower(seg)
		if len(low) != len(seg) {
			// Lower-casing changed byte lengths (rare letters such as
			// U+0130): offsets would not line up, let the caller analyse.
			return 0, 0, matchUnknown
		}
		best, bestEnd := -1, -1
		for t := range terms {
			for i := 0; i < end-off; {
				j := strings.Index(low[i:], t)
				if j < 0 {
					break
				}
				p := i + j
				if p >= end-off || (best >= 0 && p >= best) {
					break
				}
				if wordBoundary(low, p, p+len(t)) {
					best, bestEnd = p, p+len(t)
					break
				}
				i = p + 1
			}
		}
		if best >= 0 {
			return off + best, off + bestEnd, matchFound
		}
		off = end
	}
	return 0, 0, matchNone
}

// runeBoundary moves i forward to the start of a rune.
func runeBoundary(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// wordBoundary reports whether s[p:e] is not part of a longer word.
func wordBoundary(s string, p, e int) bool {
	if p > 0 {
		r, _ := utf8.DecodeLastRuneInString(s[:p])
		if isWordRune(r) {
			return false
		}
	}
	if e < len(s) {
		r, _ := utf8.DecodeRuneInString(s[e:])
		if isWordRune(r) {
			return false
		}
	}
	return true
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_'
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
