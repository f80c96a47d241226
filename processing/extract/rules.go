package extract

import (
	"context"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"

	"docflow"
	"docflow/processing/classify"
)

// Rules is the offline provider: regular expressions and heuristics over
// the text, in English, German, French, Spanish and Italian.
type Rules struct{}

var _ Provider = Rules{}

// NewRules returns the rules provider.
func NewRules() Rules { return Rules{} }

// Name implements Provider.
func (Rules) Name() string { return ProviderRules }

// maxScan bounds how much text the rules look at: metadata sits on the
// first pages, and regexes over a 500-page OCR text would cost seconds.
const maxScan = 64 << 10

var (
	reSenderLabel = regexp.MustCompile(`(?im)^\s*(?:from|sender|von|absender|de|expéditeur|remitente|mittente)\s*:\s*(.{2,80})$`)
	reCompany     = regexp.MustCompile(`(?m)^[^\n]{0,60}?\b[\p{L}0-9&.,' -]{1,60}\s(?:GmbH(?: & Co\. KG)?|AG|KG|OHG|UG|e\.K\.|e\.V\.|Ltd\.?|Limited|LLC|Inc\.?|Corp\.?|Corporation|plc|PLC|S\.A\.|SA|SAS|SARL|S\.r\.l\.|S\.p\.A\.|S\.L\.|B\.V\.|N\.V\.|AB|ApS|Oy)\b\.?`)
	reReference   = regexp.MustCompile(`(?i)\b(?:invoice\s*(?:no\.?|number|nr\.?|#)|rechnungs?\s*-?\s*(?:nr\.?|nummer)|rechnungsnummer|reference(?:\s*(?:no\.?|number))?|ref\.?|referenz|unser zeichen|aktenzeichen|facture\s*n[°o]\.?|n[°o]\s*de\s*facture|número\s*de\s*factura|factura\s*n[°oº]\.?|fattura\s*n[°r.]*|order\s*(?:no\.?|number)|bestellnummer|auftragsnummer|kundennummer|customer\s*(?:no\.?|number|id)|vertragsnummer|contract\s*(?:no\.?|number)|policy\s*(?:no\.?|number)|versicherungsnummer|belegnummer|beleg-nr\.?)\s*[:#.]?\s*([A-Z0-9][A-Z0-9\-/._]{1,30}[A-Z0-9])`)
	reLetters     = regexp.MustCompile(`\p{L}{3,}`)
)

// Extract implements Provider.
func (r Rules) Extract(ctx context.Context, text, filename string) (*docflow.Metadata, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(text) > maxScan {
		cut := maxScan
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	m := &docflow.Metadata{Provider: ProviderRules}
	cls := classify.Classify(text, filepath.Base(filename), nil, nil, true)
	if cls.Category != classify.Unknown {
		m.DocumentType = cls.Category
	}
	if d, ok := documentDate(text); ok {
		m.Date = d.Format(time.DateOnly)
	}
	m.Amount, m.Currency, _ = documentAmount(text)
	m.IBAN = findIBAN(text)
	m.ReferenceNumber = findReference(text)
	m.Sender = findSender(text)
	m.Language = DetectLanguage(text)
	m.Title = findTitle(text, filename, m)
	m.Tags = findTags(text, m)

	found := 0
	for _, s := range []string{m.DocumentType, m.Date, m.Amount, m.Sender, m.ReferenceNumber, m.Language} {
		if s != "" {
			found++
		}
	}
	m.Confidence = float64(found) / 6
	Normalize(m)
	return m, nil
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func findReference(text string) string {
	for _, m := range reReference.FindAllStringSubmatch(text, -1) {
		ref := m[1]
		if strings.ContainsAny(ref, "0123456789") && NormalizeDate(ref) == "" {
			return ref
		}
	}
	return ""
}

func findSender(text string) string {
	if m := reSenderLabel.FindStringSubmatch(text); m != nil {
		return strings.Trim(strings.TrimSpace(m[1]), ",;")
	}
	if m := reCompany.FindString(text); m != "" {
		s := strings.TrimSpace(m)
		// Drop a leading address-line fragment before the name ("Invoice from ").
		for _, p := range []string{"invoice from ", "rechnung von ", "from ", "von "} {
			if i := strings.Index(strings.ToLower(s), p); i >= 0 {
				s = s[i+len(p):]
			}
		}
		return strings.Trim(s, " ,;-")
	}
	return ""
}

// findTitle takes the first line that reads like a heading; a bare type word
// ("INVOICE") is completed with the sender and date, and without any usable
// line the filename stem becomes the title.
func findTitle(text, filename string, m *docflow.Metadata) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if i > 40 {
			break
		}
		l = strings.Join(strings.Fields(l), " ")
		if len(l) < 3 || len(l) > 120 || len(reLetters.FindAllString(l, -1)) == 0 {
			continue
		}
		if NormalizeDate(l) != "" && len(reLetters.FindAllString(l, -1)) <= 1 {
			continue // a date line
		}
		if strings.Contains(l, "@") || strings.HasPrefix(strings.ToLower(l), "http") {
			continue
		}
		if len(strings.Fields(l)) <= 2 && m.DocumentType != "" && m.Sender != "" &&
			classify.Classify(l, "", nil, nil, true).Category == m.DocumentType {
			t := titleCase(l) + " – " + m.Sender
			if m.Date != "" {
				t += " – " + m.Date
			}
			return t
		}
		return l
	}
	stem := strings.TrimSuffix(filepath.Base(filename), filepath.Ext(filename))
	stem = strings.Join(strings.FieldsFunc(stem, func(r rune) bool { return r == '_' || r == '-' || r == '.' || unicode.IsSpace(r) }), " ")
	if stem == "" && m.DocumentType != "" {
		return classify.Label(m.DocumentType)
	}
	return stem
}

func titleCase(s string) string {
	words := strings.Fields(strings.ToLower(s))
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}

// findTags returns the document type and the most frequent content words
// (four letters or more, not stopwords), at most MaxTags.
func findTags(text string, m *docflow.Metadata) []string {
	var tags []string
	if m.DocumentType != "" {
		tags = append(tags, m.DocumentType)
	}
	stop := map[string]bool{}
	for _, ws := range stopwords {
		for _, w := range ws {
			stop[w] = true
		}
	}
	for _, w := range []string{"this", "that", "with", "from", "have", "your", "will", "page", "seite", "date", "datum", "total", "summe", "number", "nummer", "eine", "einer", "einen", "dear", "sehr", "geehrte", "regards", "grüßen", "freundlichen", "mit", "pour", "para", "della"} {
		stop[w] = true
	}
	counts := map[string]int{}
	for _, w := range reLetters.FindAllString(strings.ToLower(text), 20000) {
		if len([]rune(w)) >= 4 && !stop[w] {
			counts[w]++
		}
	}
	type wc struct {
		w string
		n int
	}
	var list []wc
	for w, n := range counts {
		if n >= 2 {
			list = append(list, wc{w, n})
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].n != list[j].n {
			return list[i].n > list[j].n
		}
		return list[i].w < list[j].w
	})
	for _, x := range list {
		if len(tags) >= MaxTags {
			break
		}
		if x.w != m.DocumentType {
			tags = append(tags, x.w)
		}
	}
	return tags
}
