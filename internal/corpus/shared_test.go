package corpus

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(RunTests(m)) }

// TestShared: one generation per Options value, reused by later calls.
func TestShared(t *testing.T) {
	o := Options{Seed: 1, ScanWidthMM: 40, ScanHeightMM: 20, ScanLines: 1, TIFFPages: 1}
	a := Shared(t, o)
	if b := Shared(t, o); b != a {
		t.Fatal("a second call generated the corpus again")
	}
	o.Seed = 2
	if c := Shared(t, o); c == a || c.Dir == a.Dir {
		t.Fatal("other options returned the same corpus")
	}
	if _, err := os.Stat(a.Get("scan_clean.png").Path); err != nil {
		t.Fatal(err)
	}
}
