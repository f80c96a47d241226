package httpdest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strings"
)

// SafeName makes a file name every cloud drive stores as given: the
// characters Windows, OneDrive and Dropbox refuse (\ / : * ? " < > | and
// control characters) become "_", trailing dots and spaces go, and an
// empty name becomes "document".
func SafeName(name string) string {
	s := strings.Map(func(r rune) rune {
		if r < 32 || r == 0x7f || strings.ContainsRune(`\/:*?"<>|`, r) {
			return '_'
		}
		return r
	}, name)
	s = strings.TrimSpace(strings.TrimRight(s, ". "))
	if s == "" {
		return "document"
	}
	return s
}

// ProbeName is the name of a probe object: unique, so a probe never
// replaces a delivered document.
func ProbeName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "docflow-probe-" + hex.EncodeToString(b[:]) + ".txt"
}

// ProbeBody is what a probe object holds.
const ProbeBody = "docflow destination test\n"

// ReadChunk fills buf from r. last is true when r ended within it (n may
// then be less than len(buf), or 0).
func ReadChunk(r io.Reader, buf []byte) (n int, last bool, err error) {
	n, err = io.ReadFull(r, buf)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return n, true, nil
	}
	return n, false, err
}
