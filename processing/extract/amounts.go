package extract

import (
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// currencyCodes maps symbols and codes to ISO 4217 codes.
var currencyCodes = map[string]string{
	"€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR",
	"$": "USD", "usd": "USD", "us$": "USD",
	"chf": "CHF", "fr.": "CHF", "sfr": "CHF",
	"£": "GBP", "gbp": "GBP",
}

const (
	curRE = `(€|EUR|Euro|USD|US\$|\$|CHF|SFr|£|GBP)`
	numRE = `(\d{1,3}(?:[.,' \x{00A0}]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?)`
)

var (
	reAmountPre  = regexp.MustCompile(`(?i)` + curRE + `\s?` + numRE + `(?:[^\d]|$)`)
	reAmountPost = regexp.MustCompile(`(?i)(?:^|[^\d.,])` + numRE + `\s?` + curRE + `\b?`)
	reNumber     = regexp.MustCompile(numRE)
)

// totalLabels are the words that introduce a document's total, in order
// of preference where several start at the same place ("total amount"
// before "total").
var totalLabels = newFoldLabels("grand total", "total amount", "total due", "amount due", "balance due", "invoice total", "total",
	"gesamtbetrag", "rechnungsbetrag", "endbetrag", "gesamtsumme", "zu zahlen", "summe", "betrag",
	"montant total", "montant", "net à payer", "importe total", "importe", "totale", "importo")

// foldLabels finds words case-insensitively: what the case-insensitive
// regexp alternation of the words finds (leftmost first, earlier words
// preferred, no overlaps), at a fraction of the cost (Go's regexp runs
// such an alternation through its NFA at every position of the text).
type foldLabels struct {
	all []string
	// byStart lists, per lower-case ASCII first letter, the words
	// starting with it, in order.
	byStart [256][]string
}

// newFoldLabels takes lower-case words that start with an ASCII letter.
func newFoldLabels(words ...string) *foldLabels {
	l := &foldLabels{all: words}
	for _, w := range words {
		l.byStart[w[0]] = append(l.byStart[w[0]], w)
	}
	return l
}

// find returns the [start, end) of every label in text.
func (l *foldLabels) find(text string) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); {
		matched := 0
		candidates := l.all // a non-ASCII rune may fold to a first letter (ſ to s)
		if c := text[i]; c < 0x80 {
			candidates = l.byStart[c|0x20]
		}
		for _, w := range candidates {
			if n := hasPrefixFold(text[i:], w); n > 0 {
				matched = n
				break
			}
		}
		if matched > 0 {
			out = append(out, [2]int{i, i + matched})
			i += matched
			continue
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return out
}

// hasPrefixFold reports the byte length of the prefix of s that equals
// prefix under Unicode simple case folding (as regexp's (?i)), or 0.
func hasPrefixFold(s, prefix string) int {
	n := 0
	for _, pr := range prefix {
		if n >= len(s) {
			return 0
		}
		sr, size := utf8.DecodeRuneInString(s[n:])
		if sr != pr && !foldEqual(sr, pr) {
			return 0
		}
		n += size
	}
	return n
}

// foldEqual reports whether a and b are in the same simple case-folding
// orbit.
func foldEqual(a, b rune) bool {
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}

type foundAmount struct {
	value    *big.Rat
	currency string
	pos      int
}

// digitGrouping removes the thousands separators a space, a no-break space
// or an apostrophe can be.
var digitGrouping = strings.NewReplacer(" ", "", "\u00a0", "", "'", "")

// parseNumber reads 1.234,56 / 1,234.56 / 1 234,56 / 1234.5 / 1.234 and
// returns the value as a decimal string with a dot ("1234.56").
func parseNumber(s string) (string, bool) {
	s = digitGrouping.Replace(strings.TrimSpace(s))
	if s == "" {
		return "", false
	}
	lastDot, lastComma := strings.LastIndex(s, "."), strings.LastIndex(s, ",")
	dec := -1
	switch {
	case lastDot >= 0 && lastComma >= 0:
		dec = max(lastDot, lastComma) // the later one is the decimal mark
	case lastDot >= 0 || lastComma >= 0:
		i := max(lastDot, lastComma)
		// A separator that repeats (1.234.567) or is followed by exactly
		// three digits (1.234, 1,234) groups thousands; otherwise it is the
		// decimal mark (12,5 or 12.50).
		if strings.Count(s, s[i:i+1]) == 1 && len(s)-i-1 != 3 {
			dec = i
		}
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case i == dec:
			b.WriteByte('.')
		}
	}
	out := b.String()
	if _, err := strconv.ParseFloat(out, 64); err != nil {
		return "", false
	}
	return out, true
}

func findAmounts(text string) []foundAmount {
	var out []foundAmount
	add := func(num, cur string, pos int) {
		v, ok := parseNumber(num)
		if !ok {
			return
		}
		r, ok := new(big.Rat).SetString(v)
		if !ok || r.Sign() <= 0 {
			return
		}
		out = append(out, foundAmount{r, currencyCodes[strings.ToLower(cur)], pos})
	}
	for _, m := range reAmountPre.FindAllStringSubmatchIndex(text, -1) {
		add(text[m[4]:m[5]], text[m[2]:m[3]], m[0])
	}
	for _, m := range reAmountPost.FindAllStringSubmatchIndex(text, -1) {
		add(text[m[2]:m[3]], text[m[4]:m[5]], m[2])
	}
	return out
}

// documentAmount picks the total: the first amount within a short distance
// after a total label (the last such label wins, since totals come last),
// else the largest amount.
func documentAmount(text string) (amount, currency string, ok bool) {
	amts := findAmounts(text)
	if len(amts) == 0 {
		return "", "", false
	}
	var best *foundAmount
	labels := totalLabels.find(text)
	for li := len(labels) - 1; li >= 0 && best == nil; li-- {
		end := labels[li][1]
		for i := range amts {
			if amts[i].pos >= end && amts[i].pos-end <= 40 && (best == nil || amts[i].pos < best.pos) {
				best = &amts[i]
			}
		}
	}
	if best == nil {
		for i := range amts {
			if best == nil || amts[i].value.Cmp(best.value) > 0 {
				best = &amts[i]
			}
		}
	}
	return best.value.FloatString(2), best.currency, true
}

// NormalizeAmount turns "1.234,56", "€ 12", 12.5 into "1234.56", "12.00",
// "12.50"; "" when there is no number.
func NormalizeAmount(v any) string {
	switch x := v.(type) {
	case float64:
		return new(big.Rat).SetFloat64(x).FloatString(2)
	case int:
		return strconv.Itoa(x) + ".00"
	case string:
		if m := reNumber.FindString(x); m != "" {
			if n, ok := parseNumber(m); ok {
				if r, ok := new(big.Rat).SetString(n); ok {
					return r.FloatString(2)
				}
			}
		}
	}
	return ""
}

// NormalizeCurrency maps a symbol or code to an ISO 4217 code; an unknown
// three-letter code is kept upper-cased.
func NormalizeCurrency(s string) string {
	s = strings.TrimSpace(s)
	if c, ok := currencyCodes[strings.ToLower(s)]; ok {
		return c
	}
	if len(s) == 3 && strings.IndexFunc(s, func(r rune) bool { return (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') }) < 0 {
		return strings.ToUpper(s)
	}
	return ""
}
