package desttest

import (
	"crypto/sha256"
	"io"
	"testing"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "24 MiB": 24 << 20, "512KiB": 512 << 10, "100": 100} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "1GB", "-1", "x MiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A body is the same bytes for the same seed, and its Sum is theirs.
func TestBody(t *testing.T) {
	a, b := NewBody(1, 100_000), NewBody(1, 100_000)
	ha, hb := sha256.New(), sha256.New()
	if n, err := io.Copy(ha, a); err != nil || n != 100_000 {
		t.Fatal(n, err)
	}
	io.Copy(hb, b) //nolint:errcheck
	if string(ha.Sum(nil)) != string(hb.Sum(nil)) || string(a.Sum()) != string(ha.Sum(nil)) || a.Read64() != 100_000 {
		t.Fatal("bodies differ")
	}
}
