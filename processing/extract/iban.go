package extract

import (
	"math/big"
	"regexp"
	"strings"
)

// ibanLengths holds the IBAN length per country (SEPA and common others).
var ibanLengths = map[string]int{
	"AD": 24, "AT": 20, "BE": 16, "BG": 22, "CH": 21, "CY": 28, "CZ": 24, "DE": 22,
	"DK": 18, "EE": 20, "ES": 24, "FI": 18, "FR": 27, "GB": 22, "GI": 23, "GR": 27,
	"HR": 21, "HU": 28, "IE": 22, "IS": 26, "IT": 27, "LI": 21, "LT": 20, "LU": 20,
	"LV": 21, "MC": 27, "MT": 31, "NL": 18, "NO": 15, "PL": 28, "PT": 25, "RO": 24,
	"SE": 24, "SI": 19, "SK": 24, "SM": 27, "VA": 22, "TR": 26, "AE": 23, "SA": 24,
	"IL": 23, "BR": 29, "UA": 29, "RS": 22, "BA": 20, "ME": 22, "MK": 19, "AL": 28,
}

var reIBAN = regexp.MustCompile(`\b([A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)\b`)

// ValidIBAN reports whether s (spaces allowed) is an IBAN with a valid
// length for its country and a valid ISO 13616 mod-97 checksum.
func ValidIBAN(s string) bool {
	s = strings.ToUpper(strings.ReplaceAll(s, " ", ""))
	if len(s) < 15 || len(s) > 34 {
		return false
	}
	if n, ok := ibanLengths[s[:2]]; ok && n != len(s) {
		return false
	}
	var digits strings.Builder
	for _, r := range s[4:] + s[:4] {
		switch {
		case r >= '0' && r <= '9':
			digits.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			digits.WriteString(big.NewInt(int64(r - 'A' + 10)).String())
		default:
			return false
		}
	}
	n, ok := new(big.Int).SetString(digits.String(), 10)
	return ok && new(big.Int).Mod(n, big.NewInt(97)).Int64() == 1
}

// findIBAN returns the first valid IBAN in text, compact and upper-case.
func findIBAN(text string) string {
	for _, m := range reIBAN.FindAllString(strings.ToUpper(text), -1) {
		// The pattern may have swallowed a following word group; try the
		// candidate and its shorter prefixes.
		c := strings.ReplaceAll(m, " ", "")
		for l := len(c); l >= 15; l-- {
			if ValidIBAN(c[:l]) {
				return c[:l]
			}
		}
	}
	return ""
}
