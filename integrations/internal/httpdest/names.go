package httpdest

import (
	"context"
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

// ReadChunk fills buf from r, looking at ctx between reads, so a body
// that trickles does not hold a cancelled delivery. last is true when r
// ended within buf (n may then be less than len(buf), or 0).
func ReadChunk(ctx context.Context, r io.Reader, buf []byte) (n int, last bool, err error) {
	for n < len(buf) {
		if err := ctx.Err(); err != nil {
			return n, false, err
		}
		k, err := r.Read(buf[n:])
		n += k
		if errors.Is(err, io.EOF) {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// Ends reports whether r holds nothing more, reading at most one byte,
// which is lost: after a chunk that filled its buffer exactly as the
// document's size said, more is an error anyway.
func Ends(ctx context.Context, r io.Reader) (bool, error) {
	var one [1]byte
	n, last, err := ReadChunk(ctx, r, one[:])
	if err != nil {
		return false, err
	}
	return n == 0 && last, nil
}
