// Package corpus generates test documents with a known ground truth: text
// rendered into DOCX, XLSX, PPTX, text PDFs and scanned images (PNG, TIFF,
// JPEG at 300 dpi, with and without noise and skew), plus hostile samples
// (decompression bomb, ZIP bomb, corrupt, encrypted and zero-page PDFs,
// EXIF-rotated photo). Everything is computed from a seed; nothing is
// downloaded, so tests and benchmarks can measure character error rates.
package corpus

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

var (
	subjects = []string{"The committee", "Our team", "The customer", "The supplier", "The board", "Each department",
		"The auditor", "The manager", "This report", "The new policy", "The project group", "The landlord",
		"The insurance company", "The bank", "Every employee", "The council", "The director", "The vendor"}
	verbs = []string{"reviewed", "approved", "prepared", "received", "confirmed", "discussed", "updated", "delivered",
		"requested", "signed", "described", "planned", "completed", "checked", "reported", "accepted", "changed"}
	objects = []string{"the annual budget", "the monthly invoice", "the revised contract", "the quarterly report",
		"the delivery schedule", "the payment terms", "the service agreement", "the new office lease",
		"the travel expenses", "the safety inspection", "the insurance policy", "the tax statement",
		"the customer survey", "the training plan", "the project milestones", "the account balance"}
	tails = []string{"before the end of the month", "after a long meeting", "with minor corrections",
		"for the next financial year", "without further questions", "in the main building",
		"as agreed in the last letter", "for all regional offices", "on short notice", "by registered mail",
		"during the morning session", "at the request of the client", "with the help of two experts"}
)

// Sentence returns one deterministic English sentence.
func Sentence(r *rand.Rand) string {
	s := fmt.Sprintf("%s %s %s %s.", subjects[r.IntN(len(subjects))], verbs[r.IntN(len(verbs))],
		objects[r.IntN(len(objects))], tails[r.IntN(len(tails))])
	if r.IntN(4) == 0 {
		s = strings.TrimSuffix(s, ".") + fmt.Sprintf(" on %d %s %d.", 1+r.IntN(28), months[r.IntN(12)], 2019+r.IntN(6))
	}
	return s
}

var months = []string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}

// NewRand returns the generator's random source for a seed.
func NewRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
}

// Lines returns n lines of English prose, each at most width characters,
// deterministic for a seed.
func Lines(seed int64, n, width int) []string {
	r := NewRand(seed)
	var out []string
	var cur strings.Builder
	for len(out) < n {
		for _, w := range strings.Fields(Sentence(r)) {
			if cur.Len() > 0 && utf8.RuneCountInString(cur.String())+1+utf8.RuneCountInString(w) > width {
				out = append(out, cur.String())
				cur.Reset()
				if len(out) == n {
					return out
				}
			}
			if cur.Len() > 0 {
				cur.WriteByte(' ')
			}
			cur.WriteString(w)
		}
	}
	return out
}

// InvoiceLines returns a German invoice with known fields, for extraction
// and classification tests.
func InvoiceLines(seed int64) []string {
	r := NewRand(seed)
	n := 1000 + r.IntN(9000)
	net := 100 + r.IntN(900)
	return []string{
		"Muster Consulting GmbH",
		"Hauptstrasse 1, 10115 Berlin",
		"",
		"RECHNUNG",
		fmt.Sprintf("Rechnungsnummer: RE-2024-%04d", n),
		"Rechnungsdatum: 15.03.2024",
		"",
		"Sehr geehrte Damen und Herren,",
		"fuer die Beratung im Maerz berechnen wir Ihnen:",
		fmt.Sprintf("Beratung %d,00 EUR", net),
		fmt.Sprintf("Gesamtbetrag: %d,00 EUR", net),
		"IBAN DE89 3704 0044 0532 0130 00",
		"Mit freundlichen Gruessen",
	}
}

// CER is the character error rate of got against want: the edit distance
// divided by the length of want, after collapsing whitespace (layout is
// not what OCR accuracy is about).
func CER(want, got string) float64 {
	a := []rune(strings.Join(strings.Fields(want), " "))
	b := []rune(strings.Join(strings.Fields(got), " "))
	if len(a) == 0 {
		if len(b) == 0 {
			return 0
		}
		return 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(b)]) / float64(len(a))
}
