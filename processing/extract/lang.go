package extract

import "strings"

// stopwords per language: frequent short words that rarely occur in the
// other four languages.
var stopwords = map[string][]string{
	"en": {"the", "and", "of", "to", "is", "in", "for", "that", "with", "this", "you", "are", "be", "on", "your", "we", "from", "have", "not", "will", "please", "our", "by", "it"},
	"de": {"der", "die", "und", "das", "ist", "nicht", "mit", "den", "ein", "eine", "zu", "von", "sie", "auf", "für", "wir", "ihre", "bitte", "dem", "des", "auch", "sehr", "wird", "im"},
	"fr": {"le", "la", "les", "et", "des", "est", "une", "pour", "que", "dans", "pas", "vous", "nous", "avec", "sur", "au", "du", "votre", "ce", "qui", "sont", "par", "aux", "merci"},
	"es": {"el", "los", "las", "y", "es", "una", "para", "que", "por", "con", "del", "su", "se", "al", "como", "más", "pero", "sus", "usted", "gracias", "este", "esta", "lo", "muy"},
	"it": {"il", "gli", "e", "di", "che", "è", "per", "una", "non", "con", "del", "della", "sono", "alla", "anche", "questo", "lo", "nel", "grazie", "si", "ci", "come", "più", "dei"},
}

// Languages lists the codes DetectLanguage can return.
var Languages = []string{"en", "de", "fr", "es", "it"}

// DetectLanguage returns the ISO 639-1 code of the language with the most
// stopword hits, or "" when the text is too short to tell.
func DetectLanguage(text string) string {
	sets := map[string]map[string]bool{}
	for lang, ws := range stopwords {
		set := map[string]bool{}
		for _, w := range ws {
			set[w] = true
		}
		sets[lang] = set
	}
	counts := map[string]int{}
	n := 0
	for _, tok := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r > 127 && r != '«' && r != '»' && r != '’')
	}) {
		n++
		if n > 5000 {
			break
		}
		for _, lang := range Languages {
			if sets[lang][tok] {
				counts[lang]++
			}
		}
	}
	best, bestN := "", 0
	for _, lang := range Languages { // fixed order keeps ties stable
		if counts[lang] > bestN {
			best, bestN = lang, counts[lang]
		}
	}
	if bestN < 2 {
		return ""
	}
	return best
}

// NormalizeLanguage maps names and codes ("German", "deu", "de-DE") to an
// ISO 639-1 code; unknown values give "".
func NormalizeLanguage(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(s, "-_"); i > 0 {
		s = s[:i]
	}
	switch s {
	case "en", "eng", "english", "englisch":
		return "en"
	case "de", "deu", "ger", "german", "deutsch":
		return "de"
	case "fr", "fra", "fre", "french", "français", "francais":
		return "fr"
	case "es", "spa", "spanish", "español", "espanol":
		return "es"
	case "it", "ita", "italian", "italiano":
		return "it"
	}
	if len(s) == 2 {
		return s
	}
	return ""
}
