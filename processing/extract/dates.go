package extract

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// monthNames maps lowercased month names and abbreviations (en, de, fr, es,
// it) to month numbers.
var monthNames = func() map[string]int {
	m := map[string]int{}
	add := func(n int, names ...string) {
		for _, s := range names {
			m[s] = n
		}
	}
	add(1, "january", "jan", "januar", "jänner", "janvier", "janv", "enero", "ene", "gennaio", "gen")
	add(2, "february", "feb", "februar", "feber", "février", "fevrier", "févr", "fevr", "febrero", "febbraio")
	add(3, "march", "mar", "märz", "maerz", "mär", "mars", "marzo")
	add(4, "april", "apr", "avril", "avr", "abril", "abr", "aprile")
	add(5, "may", "mai", "mayo", "maggio", "mag")
	add(6, "june", "jun", "juni", "juin", "junio", "giugno", "giu")
	add(7, "july", "jul", "juli", "juillet", "juil", "julio", "luglio", "lug")
	add(8, "august", "aug", "août", "aout", "agosto", "ago")
	add(9, "september", "sep", "sept", "septembre", "septiembre", "settembre", "set")
	add(10, "october", "oct", "oktober", "okt", "octobre", "octubre", "ottobre", "ott")
	add(11, "november", "nov", "novembre", "noviembre")
	add(12, "december", "dec", "dezember", "dez", "décembre", "decembre", "déc", "diciembre", "dic", "dicembre")
	return m
}()

const monthRE = `([A-Za-zÄÖÜäöüéèûÉ]{3,10})\.?`

var (
	reISODate   = regexp.MustCompile(`\b(\d{4})-(\d{1,2})-(\d{1,2})\b`)
	reNumDate   = regexp.MustCompile(`\b(\d{1,2})([./-])(\d{1,2})([./-])(\d{4}|\d{2})\b`)
	reDayMonthY = regexp.MustCompile(`(?i)\b(\d{1,2})(?:\.|er|st|nd|rd|th)?\s*(?:de\s+)?` + monthRE + `\s*(?:de\s+)?,?\s*(\d{4})\b`)
	reMonthDayY = regexp.MustCompile(`(?i)\b` + monthRE + `\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
)

// foundDate is a date and where it was found.
type foundDate struct {
	date time.Time
	pos  int
}

// findDates returns every plausible date in text, in text order.
func findDates(text string) []foundDate {
	var out []foundDate
	add := func(y, m, d, pos int) {
		if y < 100 {
			y += 2000
			if y > time.Now().Year()+10 {
				y -= 100
			}
		}
		if y < 1900 || y > 2200 || m < 1 || m > 12 || d < 1 || d > 31 {
			return
		}
		t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
		if t.Day() != d { // 31 February
			return
		}
		out = append(out, foundDate{t, pos})
	}
	for _, m := range reISODate.FindAllStringSubmatchIndex(text, -1) {
		add(atoi(text[m[2]:m[3]]), atoi(text[m[4]:m[5]]), atoi(text[m[6]:m[7]]), m[0])
	}
	for _, m := range reNumDate.FindAllStringSubmatchIndex(text, -1) {
		if text[m[4]:m[5]] != text[m[8]:m[9]] {
			continue // 12.03/2024 is not a date
		}
		a, b, y := atoi(text[m[2]:m[3]]), atoi(text[m[6]:m[7]]), atoi(text[m[10]:m[11]])
		d, mo := a, b
		// Day first (European) unless that is impossible and month-first is
		// not (US 03/15/2024).
		if b > 12 && a <= 12 && text[m[4]:m[5]] == "/" {
			d, mo = b, a
		}
		add(y, mo, d, m[0])
	}
	for _, m := range reDayMonthY.FindAllStringSubmatchIndex(text, -1) {
		if mo, ok := monthNames[strings.ToLower(text[m[4]:m[5]])]; ok {
			add(atoi(text[m[6]:m[7]]), mo, atoi(text[m[2]:m[3]]), m[0])
		}
	}
	for _, m := range reMonthDayY.FindAllStringSubmatchIndex(text, -1) {
		if mo, ok := monthNames[strings.ToLower(text[m[2]:m[3]])]; ok {
			add(atoi(text[m[6]:m[7]]), mo, atoi(text[m[4]:m[5]]), m[0])
		}
	}
	// Sort by position (insertion order is per pattern).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].pos < out[j-1].pos; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// dateLabels introduce the document's date.
var dateLabels = newFoldLabels("invoice date", "date of issue", "issue date", "document date", "rechnungsdatum", "belegdatum",
	"ausstellungsdatum", "datum", "date de facture", "date", "fecha", "data")

// findDateLabels returns the [start, end) of every date label with the
// blanks and the colon or full stop after it (regexp's `label\s*[:.]?`).
func findDateLabels(text string) [][2]int {
	labels := dateLabels.find(text)
	for i := range labels {
		end := labels[i][1]
		for end < len(text) && strings.IndexByte("\t\n\f\r ", text[end]) >= 0 {
			end++
		}
		if end < len(text) && (text[end] == ':' || text[end] == '.') {
			end++
		}
		labels[i][1] = end
	}
	return labels
}

// documentDate picks the document's date: the first date right after a date
// label, else the first date in the text.
func documentDate(text string) (time.Time, bool) {
	dates := findDates(text)
	if len(dates) == 0 {
		return time.Time{}, false
	}
	for _, lm := range findDateLabels(text) {
		for _, d := range dates {
			if d.pos >= lm[1] && d.pos-lm[1] <= 40 {
				return d.date, true
			}
		}
	}
	return dates[0].date, true
}

// NormalizeDate parses a date written in any supported form and returns it
// as YYYY-MM-DD, or "" when s holds no date.
func NormalizeDate(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.Format(time.DateOnly)
		}
	}
	if d := findDates(s); len(d) > 0 {
		return d[0].date.Format(time.DateOnly)
	}
	return ""
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
