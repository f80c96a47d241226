package intake

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"docflow"
)

func TestSanitizeFilename(t *testing.T) {
	cases := map[string]string{
		"report.pdf":                      "report.pdf",
		"../../etc/passwd":                "passwd",
		`..\..\boot.ini`:                  "boot.ini",
		"/abs/a.pdf":                      "a.pdf",
		"C:\\x\\y.docx":                   "y.docx",
		"a\x00b\x1f\x7fc.pdf":             "abc.pdf",
		"  spaced .pdf  ":                 "spaced .pdf",
		"..":                              "upload",
		"":                                "upload",
		"...hidden.pdf":                   "hidden.pdf",
		"a..b.pdf":                        "a.b.pdf",
		"a....pdf":                        "a.pdf",
		"Rechnung März.pdf":               "Rechnung März.pdf",
		"bad\xffutf8.pdf":                 "badutf8.pdf",
		"dir/":                            "upload",
		"new\nline.pdf":                   "newline.pdf",
		"trailing.":                       "trailing",
		strings.Repeat("é", 200) + ".pdf": strings.Repeat("é", 125) + ".pdf",
		// Bidi overrides would show "invoice\u202Efdp.exe" as
		// "invoiceexe.pdf".
		"invoice\u202Efdp.exe":            "invoicefdp.exe",
		"a\u202A\u202B\u202C\u202Db.pdf":  "ab.pdf",
		"\u2066x\u2067y\u2068z\u2069.pdf": "xyz.pdf",
		// Zero-width characters make two names look the same.
		"re\u200bport\u200c\u200d.pdf": "report.pdf",
		"\ufeffbom\u2060.pdf":          "bom.pdf",
		// Fullwidth dot, slash and backslash become what they imitate.
		"report\uff0epdf":                   "report.pdf",
		"\uff0e\uff0e\uff0fetc\uff0fpasswd": "passwd",
		"..\uff3c..\uff3cboot.ini":          "boot.ini",
		"\uff0e\uff0e":                      "upload",
		// Windows device names, with any extension, in any case.
		"CON":           "_CON",
		"con.pdf":       "_con.pdf",
		"NUL.tar.gz":    "_NUL.tar.gz",
		"Com1.docx":     "_Com1.docx",
		"lpt9.txt":      "_lpt9.txt",
		"aux .pdf":      "_aux .pdf",
		"COM10.pdf":     "COM10.pdf",
		"console.pdf":   "console.pdf",
		"prn\u200b.pdf": "_prn.pdf",
	}
	for in, want := range cases {
		if got := SanitizeFilename(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func FuzzSanitizeFilename(f *testing.F) {
	for _, s := range []string{"../a.pdf", `..\..\x`, "a\x00.pdf", "....", "/", "日本.pdf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := SanitizeFilename(in)
		if out == "" || len(out) > maxFilenameBytes || !utf8.ValidString(out) ||
			strings.ContainsAny(out, "/\\\x00\r\n\uff0e\uff0f\uff3c") || strings.Contains(out, "..") || strings.HasPrefix(out, ".") ||
			strings.IndexFunc(out, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) >= 0 {
			t.Fatalf("%q -> %q", in, out)
		}
		stem, _, _ := strings.Cut(out, ".")
		if docflow.WindowsDeviceName(strings.TrimSpace(stem)) {
			t.Fatalf("%q -> %q: a Windows device name", in, out)
		}
		if SanitizeFilename(out) != out {
			t.Fatalf("not idempotent: %q -> %q -> %q", in, out, SanitizeFilename(out))
		}
	})
}

func FuzzParseFetchURL(f *testing.F) {
	for _, s := range []string{"http://a/b.pdf", "ftp://x", "http://", "https://[::1]:80/", "http://user:pw@h/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := parseFetchURL(context.Background(), raw, nil)
		if err == nil && (u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil) {
			t.Fatalf("%q accepted as %v", raw, u)
		}
	})
}

func TestLoadFactorAndEffectiveLimit(t *testing.T) {
	cases := []struct {
		depth int
		load  float64
		want  float64
	}{
		{0, 0, 1}, {50, 1.5, 1}, {51, 0, 0.5}, {101, 0, 0.25}, {201, 0, 0.1},
		{0, 1.6, 0.5}, {0, 2.1, 0.25}, {0, 3.5, 0.1}, {60, 2.5, 0.25}, {250, 1.6, 0.1},
	}
	for _, c := range cases {
		if got := loadFactor(c.depth, c.load); got != c.want {
			t.Errorf("depth %d load %v: %v, want %v", c.depth, c.load, got, c.want)
		}
	}
	if effectiveLimit(20, 0.1) != 2 || effectiveLimit(5, 0.1) != 1 || effectiveLimit(20, 0.25) != 5 || effectiveLimit(20, 1) != 20 {
		t.Fatal("effective limit")
	}
}

func TestSlidingWindow(t *testing.T) {
	w := newWindow()
	t0 := time.Unix(1000, 0)
	span := time.Minute
	for i := 0; i < 3; i++ {
		if !w.take("u", t0.Add(time.Duration(i)*time.Second), span, 3) {
			t.Fatalf("take %d refused", i)
		}
	}
	if w.take("u", t0.Add(30*time.Second), span, 3) {
		t.Fatal("fourth in window allowed")
	}
	if !w.take("other", t0.Add(30*time.Second), span, 3) {
		t.Fatal("users share a window")
	}
	// The first upload leaves the window after 60 s, the others later.
	if !w.take("u", t0.Add(60*time.Second), span, 3) {
		t.Fatal("slot not freed after the window")
	}
	if w.take("u", t0.Add(60*time.Second+500*time.Millisecond), span, 3) {
		t.Fatal("window is not sliding")
	}
}

func TestCheckType(t *testing.T) {
	ok := map[string][]byte{
		"pdf":  []byte("%PDF-1.7\n"),
		"png":  []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
		"jpg":  []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"),
		"gif":  []byte("GIF89a\x01\x00"),
		"txt":  []byte("plain words\n"),
		"csv":  []byte("a,b\n1,2\n"),
		"rtf":  []byte(`{\rtf1\ansi hello}`),
		"svg":  []byte(`<svg xmlns="http://www.w3.org/2000/svg"></svg>`),
		"docx": []byte("PK\x03\x04\x14\x00\x06\x00"),
		"doc":  []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1\x00\x00"),
	}
	for ext, head := range ok {
		if _, err := checkType(ext, head); err != nil {
			t.Errorf("%s: %v", ext, err)
		}
	}
	bad := map[string][]byte{
		"pdf":  []byte("\x89PNG\r\n\x1a\n"),
		"txt":  []byte("%PDF-1.4\n"),
		"png":  []byte("%PDF-1.4\n"),
		"docx": []byte("%PDF-1.4\n"),
		"svg":  []byte("\x89PNG\r\n\x1a\n"),
		"exe":  []byte("MZ"),
	}
	for ext, head := range bad {
		if _, err := checkType(ext, head); err == nil {
			t.Errorf("%s accepted %q", ext, head)
		}
	}
}
