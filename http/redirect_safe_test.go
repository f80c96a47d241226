package http

import (
	"testing"

	"docflow/internal/testsupport/redirects"
)

// TestSafeNext: every trick becomes "/"; ordinary paths are kept as they
// are.
func TestSafeNext(t *testing.T) {
	t.Parallel()
	for _, next := range redirects.Tricks {
		if got := safeNext(next); got != "/" {
			t.Errorf("safeNext(%q) = %q, want /", next, got)
		}
	}
	for _, next := range []string{"/", "/ops", "/api/files?page=2&sort=name", "/api/files/12/preview?version=original",
		"/search?q=a%20b%2Fc", "/caf%C3%A9", "/a/b/", "/#top", "/api/files?next=//elsewhere"} {
		if got := safeNext(next); got != next {
			t.Errorf("safeNext(%q) = %q, want it kept", next, got)
		}
	}
}

// FuzzSafeNext: whatever next is, what safeNext keeps leads a browser to a
// path on this site.
func FuzzSafeNext(f *testing.F) {
	for _, s := range redirects.Tricks {
		f.Add(s)
	}
	f.Add("/api/files?page=2")
	f.Fuzz(func(t *testing.T, next string) {
		got := safeNext(next)
		if got != "/" && got != next {
			t.Fatalf("safeNext(%q) = %q: neither next nor /", next, got)
		}
		// The Location is the path alone (BASE_URL unset) or BASE_URL and
		// the path.
		const base = "https://docs.example.test"
		for _, loc := range []string{got, base + got} {
			if why := redirects.StaysOnSite(base+"/some/page", loc); why != "" {
				t.Fatalf("safeNext(%q) = %q: a browser reading %q %s", next, got, loc, why)
			}
		}
	})
}
