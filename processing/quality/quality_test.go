package quality

import "testing"

func TestScore(t *testing.T) {
	clean := "The quick brown fox jumps over the lazy dog. Invoice number 2024-001 dated 15 March 2024, total 1.234,56 EUR. Sehr geehrte Damen und Herren, anbei die Rechnung."
	garbage := "Th3 q#ck br~wn f0x ^^ j|_|mps 0v3r t#e l@zy d0g ~~ xkcdfqw zzkrtpl ¬¬ ¦¦ qqqxz"
	if s := Score(clean, NoConfidence); s < 90 {
		t.Errorf("clean text scored %.1f, want >= 90", s)
	}
	if s := Score(clean, 95); s < 90 {
		t.Errorf("clean text with confidence scored %.1f", s)
	}
	if s := Score(garbage, NoConfidence); s > 50 {
		t.Errorf("garbage scored %.1f, want <= 50", s)
	}
	if s := Score(clean, 30); s > 70 {
		t.Errorf("low confidence should pull the score down, got %.1f", s)
	}
	if s := Score("", 90); s != 0 {
		t.Errorf("empty text scored %.1f", s)
	}
	if s := Score("   \n\f ", NoConfidence); s != 0 {
		t.Errorf("blank text scored %.1f", s)
	}
	b := Assess(clean, 90)
	if b.Score < 0 || b.Score > 100 || b.Words == 0 {
		t.Errorf("breakdown %+v", b)
	}
}

func FuzzScore(f *testing.F) {
	f.Add("hello wörld", 50.0)
	f.Fuzz(func(t *testing.T, s string, c float64) {
		if c != c { // NaN
			return
		}
		v := Score(s, c)
		if v < 0 || v > 100 {
			t.Fatalf("score %v out of range", v)
		}
	})
}
