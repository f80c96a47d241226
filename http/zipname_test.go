package http

import "testing"

// TestZipEntryNames: names in a bulk download are clean even for records
// stored before names were cleaned at intake (bidi overrides, zero-width
// characters, fullwidth separators, Windows device names), and distinct.
func TestZipEntryNames(t *testing.T) {
	t.Parallel()
	used := map[string]int{}
	for in, want := range map[string]string{
		"invoice\u202Efdp.exe":   "invoicefdp.exe",
		"re\u200bport.pdf":       "report.pdf",
		"..\uff0f..\uff0fpasswd": "passwd",
		"CON.pdf":                "_CON.pdf",
		"a/b.pdf":                "a_b.pdf",
	} {
		if got := uniqueName(used, in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if got := uniqueName(used, "report.pdf"); got != "report (2).pdf" {
		t.Errorf("second report.pdf: %q", got)
	}
}
