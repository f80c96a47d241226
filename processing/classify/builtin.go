package classify

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"docflow"
)

// BuiltinPrefix starts the name of every built-in rule.
const BuiltinPrefix = "builtin:"

// builtinKeywords holds, per built-in category, a filename regex, primary
// content keywords and secondary indicators (English and German). Each is
// its own rule, so a document with the title keyword and its typical
// vocabulary scores higher than one that merely mentions the word.
var builtinKeywords = []struct {
	category  string
	filename  string
	primary   string
	secondary string
}{
	{"invoice",
		`(?:^|[^\p{L}])(?:invoice|rechnung|faktura|facture|inv[-_ ]?\d)`,
		"invoice|rechnung|rechnungsnummer|invoice number|facture",
		"amount due|total due|payment due|due date|zahlbar bis|zahlungsziel|fällig|vat|mwst|ust-id|umsatzsteuer|net amount|nettobetrag"},
	{"contract",
		`(?:^|[^\p{L}])(?:contract|agreement|vertrag|vereinbarung)`,
		"contract|agreement|vertrag|vereinbarung|terms and conditions",
		"hereinafter|nachfolgend|contracting part|vertragspartner|signature|unterschrift|term of|laufzeit|kündigung|termination|governing law"},
	{"receipt",
		`(?:^|[^\p{L}])(?:receipt|quittung|kassenbon|beleg|bon)`,
		"receipt|quittung|kassenbon|kassenbeleg|thank you for your purchase|vielen dank für ihren einkauf",
		"subtotal|zwischensumme|cash|bar bezahlt|rückgeld|kartenzahlung|card payment|ec-karte|cashier|kasse"},
	{"letter",
		`(?:^|[^\p{L}])(?:letter|brief|schreiben|anschreiben)`,
		"dear sir|dear madam|dear mr|dear mrs|dear ms|sehr geehrte|liebe frau|lieber herr",
		"yours sincerely|yours faithfully|kind regards|best regards|mit freundlichen grüßen|mit freundlichen grüssen|hochachtungsvoll"},
	{"report",
		`(?:^|[^\p{L}])(?:report|bericht|analysis|analyse)`,
		"report|bericht|executive summary|zusammenfassung",
		"findings|ergebnisse|conclusion|fazit|introduction|einleitung|methodology|methodik|recommendations|empfehlungen"},
	{"bank_statement",
		`(?:^|[^\p{L}])(?:statement|kontoauszug|auszug)`,
		"bank statement|account statement|statement of account|kontoauszug",
		"opening balance|closing balance|anfangssaldo|endsaldo|kontostand|alter saldo|neuer saldo|available balance|verfügbarer betrag"},
	{"tax_document",
		`(?:^|[^\p{L}])(?:tax|steuer)`,
		"tax return|tax assessment|steuerbescheid|steuererklärung|einkommensteuer|finanzamt|tax office|form 1040",
		"steuernummer|tax id|taxpayer|taxable income|zu versteuerndes einkommen|tax year|veranlagung|steuer-id"},
	{"insurance",
		`(?:^|[^\p{L}])(?:insurance|versicherung|police|policy)`,
		"insurance|versicherung|versicherungsschein|insurance policy",
		"policy number|versicherungsnummer|premium|versicherungsbeitrag|insured|versicherungsnehmer|deductible|selbstbeteiligung|coverage|deckungssumme"},
	{"payslip",
		`(?:^|[^\p{L}])(?:payslip|pay[-_ ]?slip|gehalt|lohn|salary|entgelt)`,
		"payslip|pay slip|salary statement|gehaltsabrechnung|lohnabrechnung|entgeltabrechnung|verdienstabrechnung",
		"gross pay|net pay|bruttolohn|nettolohn|bruttogehalt|nettogehalt|social security|sozialversicherung|lohnsteuer|employer|arbeitgeber"},
}

// BuiltinRules returns the built-in rules (priority 0, system-owned). Their
// content keywords match at the start of a word, unlike user rules, so
// that "rechnung" does not fire inside "Gehaltsabrechnung".
func BuiltinRules() []*docflow.ClassificationRule {
	out := make([]*docflow.ClassificationRule, 0, 3*len(builtinKeywords))
	for _, b := range builtinKeywords {
		out = append(out,
			&docflow.ClassificationRule{Name: BuiltinPrefix + b.category + "_filename", Category: b.category, RuleType: docflow.RuleFilenamePattern, Pattern: b.filename, Enabled: true},
			&docflow.ClassificationRule{Name: BuiltinPrefix + b.category + "_keywords", Category: b.category, RuleType: docflow.RuleContentKeyword, Pattern: b.primary, Enabled: true},
			&docflow.ClassificationRule{Name: BuiltinPrefix + b.category + "_vocabulary", Category: b.category, RuleType: docflow.RuleContentKeyword, Pattern: b.secondary, Enabled: true},
		)
	}
	return out
}

func isBuiltin(r *docflow.ClassificationRule) bool {
	return r.OwnerID == nil && strings.HasPrefix(r.Name, BuiltinPrefix)
}

// containsAtWordStart reports whether k occurs in s where it starts a word.
func containsAtWordStart(s, k string) bool {
	for off := 0; ; {
		i := strings.Index(s[off:], k)
		if i < 0 {
			return false
		}
		i += off
		if i == 0 {
			return true
		}
		r, _ := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return true
		}
		off = i + 1
	}
}
