package extract

import (
	"regexp"
	"strings"

	"docflow"
)

var reIBAN = regexp.MustCompile(`\b([A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?)\b`)

// ValidIBAN reports whether s (spaces allowed) is an IBAN with a valid
// length for its country and a valid ISO 13616 mod-97 checksum
// (docflow.ValidIBAN, the check edits of the metadata apply too).
func ValidIBAN(s string) bool { return docflow.ValidIBAN(s) }

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
