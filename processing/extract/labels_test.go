package extract

import (
	"math/rand"
	"regexp"
	"strings"
	"testing"

	"docflow/internal/corpus"
)

// reTotalLabelRef is the regular expression findTotalLabels stands for.
var reTotalLabelRef = regexp.MustCompile(`(?i)(` + strings.Join(totalLabels.all, "|") + `)`)

// reDateLabelRef is the regular expression findDateLabels stands for.
var reDateLabelRef = regexp.MustCompile(`(?i)(` + strings.Join(dateLabels.all, "|") + `)\s*[:.]?`)

func checkLabels(t *testing.T, text string) {
	t.Helper()
	compareLabels(t, text, reTotalLabelRef.FindAllStringIndex(text, -1), totalLabels.find(text))
	compareLabels(t, text, reDateLabelRef.FindAllStringIndex(text, -1), findDateLabels(text))
}

func compareLabels(t *testing.T, text string, want [][]int, got [][2]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%q: %d labels, regexp finds %d (%v vs %v)", text, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i][0] != want[i][0] || got[i][1] != want[i][1] {
			t.Fatalf("%q: label %d at %v, regexp at %v", text, i, got[i], want[i])
		}
	}
}

// TestTotalLabelsAsRegexp: the hand-written matchers of total and date
// labels find exactly what the case-insensitive regexps find, on invoices, on folding corner cases and
// on random mixtures of label fragments.
func TestTotalLabelsAsRegexp(t *testing.T) {
	for seed := int64(0); seed < 50; seed++ {
		checkLabels(t, strings.Join(append(corpus.InvoiceLines(seed), corpus.Lines(seed, 20, 80)...), "\n"))
	}
	for _, s := range []string{"", "TOTAL", "Grand Total: 12", "grand totale", "ſumme", "SUMME", "Net À Payer 3 €",
		"totaltotal", "gesamtsummebetrag", "Zu  zahlen", "zu zahlen", "\xff total", "montant totale", "IMPORTE TOTAL",
		"Rechnungsbetrag", "betraG", "tota", "amount duE",
		"Invoice Date: 2024-01-02", "DATUM  .", "date\n\n:", "data:.", "date de factur", "Date of Issue 3"} {
		checkLabels(t, s)
	}
	rng := rand.New(rand.NewSource(1))
	parts := append([]string{" ", "x", "\n", "\t", ":", ".", "ſ", "À", "é", "\xff", "1", "K"}, totalLabels.all...)
	parts = append(parts, dateLabels.all...)
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for j := rng.Intn(8); j >= 0; j-- {
			p := parts[rng.Intn(len(parts))]
			if len(p) > 2 && rng.Intn(3) == 0 {
				p = p[:rng.Intn(len(p))] // a cut label
			}
			if rng.Intn(2) == 0 {
				p = strings.ToUpper(p)
			}
			b.WriteString(p)
		}
		checkLabels(t, b.String())
	}
}
