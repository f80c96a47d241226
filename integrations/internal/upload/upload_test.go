package upload

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"a.pdf", "Rechnung März.pdf", "...pdf", ".hidden", `a "b" $c.pdf`} {
		if err := CheckName(ok); err != nil {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "a\x00b", "a\nb", "a\rb", "\x7f"} {
		if !errors.Is(CheckName(bad), ErrBadName) {
			t.Errorf("%q taken", bad)
		}
	}
}

func TestFolderAndJoin(t *testing.T) {
	for in, want := range map[string]string{"": "", ".": "", "/": "/", "docs/": "docs", "/a//b/../c": "/a/c", " /x ": "/x"} {
		if got := Folder(in); got != want {
			t.Errorf("Folder(%q) = %q, want %q", in, got, want)
		}
	}
	if Join("", "a.pdf") != "a.pdf" || Join("/", "a.pdf") != "/a.pdf" || Join("/x", "a.pdf") != "/x/a.pdf" {
		t.Fatal("Join")
	}
}

func TestNames(t *testing.T) {
	a, b := TempName(), TempName()
	if a == b || !strings.HasPrefix(a, ".docflow-upload-") || CheckName(a) != nil {
		t.Fatal(a, b)
	}
	if p := ProbeName(); CheckName(p) != nil || !strings.HasPrefix(p, ".docflow-probe-") {
		t.Fatal(p)
	}
}

func TestInt(t *testing.T) {
	m := map[string]any{"f": float64(22), "i": int64(5), "s": " 21 ", "bad": 1.5, "neg": "-1"}
	for k, want := range map[string]int{"f": 22, "i": 5, "s": 21, "missing": 9} {
		if got, err := Int(m, k, 9); err != nil || got != want {
			t.Errorf("%s: %d %v", k, got, err)
		}
	}
	for _, k := range []string{"bad", "neg"} {
		if _, err := Int(m, k, 0); err == nil {
			t.Errorf("%s taken", k)
		}
	}
}
