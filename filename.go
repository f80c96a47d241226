package docflow

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxFilenameBytes keeps names within what every filesystem and the
// Content-Disposition header accept.
const maxFilenameBytes = 255

// CleanFilename reduces a client-supplied name to a safe base name: the
// last path element (either separator, or a fullwidth one), without
// control or invisible format characters (bidi overrides, zero-width
// characters, byte order marks), "..", leading dots or surrounding spaces,
// valid UTF-8 and at most 255 bytes with the extension kept. A Windows
// device name (CON, PRN, AUX, NUL, COM1–9, LPT1–9, with any extension)
// gets a leading "_". An empty result becomes "upload". Clean names come
// back unchanged.
//
// Bidi overrides make "invoice\u202Efdp.exe" show as "invoiceexe.pdf";
// zero-width characters make two different names look alike; fullwidth
// dots and slashes become ".." and "/" where a program folds them to
// ASCII; a device name cannot be saved on Windows.
func CleanFilename(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		switch r {
		case '\\', '\uff0f', '\uff3c', '\u2215', '\u29f5', '\u29f8', '\u29f9', '\ufe68':
			return '/' // (fullwidth) slashes and backslashes, and their lookalikes
		case '\uff0e', '\ufe52', '\u2024':
			return '.' // fullwidth, small and one-dot-leader full stops
		}
		return r
	}, name)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	for strings.Contains(name, "..") {
		name = strings.ReplaceAll(name, "..", ".")
	}
	name = strings.TrimSpace(name)
	name = strings.TrimLeft(name, ". ")
	name = strings.TrimRight(name, ". ")
	if name == "" {
		return "upload"
	}
	if stem, _, _ := strings.Cut(name, "."); WindowsDeviceName(strings.TrimSpace(stem)) {
		name = "_" + name
	}
	if len(name) > maxFilenameBytes {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		base := name[:maxFilenameBytes-len(ext)]
		for !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
		if base = strings.TrimRight(base, ". "); base == "" {
			base = "upload"
		}
		name = base + ext
	}
	return name
}

// WindowsDeviceName tells the names Windows reserves for devices (in any
// case): CON, PRN, AUX, NUL, COM1–COM9 and LPT1–LPT9 (with superscript
// digits too).
func WindowsDeviceName(stem string) bool {
	switch strings.ToUpper(stem) {
	case "CON", "PRN", "AUX", "NUL":
		return true
	}
	if len(stem) < 4 {
		return false
	}
	switch strings.ToUpper(stem[:3]) {
	case "COM", "LPT":
		switch d := stem[3:]; d {
		case "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return true
		}
	}
	return false
}
