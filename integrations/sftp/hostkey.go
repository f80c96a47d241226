package sftp

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"slices"

	"golang.org/x/crypto/ssh"
)

// keyFamilies are the kinds of host key a server may hold, each with the
// algorithms that negotiate it. A server holds one key of each kind it
// uses and shows one per connection: the one whose algorithm comes first
// in both sides' lists.
var keyFamilies = []struct {
	keyType string
	algos   []string
}{
	{ssh.KeyAlgoED25519, []string{ssh.KeyAlgoED25519}},
	{"ecdsa", []string{ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521}},
	{ssh.KeyAlgoRSA, []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256}},
}

func familyOf(key ssh.PublicKey) string {
	switch t := key.Type(); t {
	case ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521:
		return "ecdsa"
	default:
		return t
	}
}

// errMismatch is a host key that is not the pinned one.
var errMismatch = errors.New("host key does not match the pinned fingerprint")

// hostKeys is the pinning of one connection attempt: it accepts only the
// key whose SHA-256 is want, and remembers the other keys it was shown.
type hostKeys struct {
	want []byte
	// families not yet ruled out, by keyType.
	left []string
	seen []ssh.PublicKey
}

func newHostKeys(want []byte) *hostKeys {
	h := &hostKeys{want: want}
	for _, f := range keyFamilies {
		h.left = append(h.left, f.keyType)
	}
	return h
}

// algorithms are the host key algorithms to offer next: those of the key
// kinds the server has not yet shown a wrong key of.
func (h *hostKeys) algorithms() []string {
	var out []string
	for _, f := range keyFamilies {
		if slices.Contains(h.left, f.keyType) {
			out = append(out, f.algos...)
		}
	}
	return out
}

func (h *hostKeys) check(_ string, _ net.Addr, key ssh.PublicKey) error {
	sum := sha256.Sum256(key.Marshal())
	if subtle.ConstantTimeCompare(sum[:], h.want) == 1 {
		return nil
	}
	h.seen = append(h.seen, key)
	h.left = slices.DeleteFunc(h.left, func(t string) bool { return t == familyOf(key) })
	return errMismatch
}

// reason is what a refused server is told as: the fingerprints it showed,
// so the user can compare them with the server's real keys and pin the
// right one if the key was changed on purpose.
func (h *hostKeys) reason() string {
	if len(h.seen) == 0 {
		return "the server's host key does not match the pinned fingerprint"
	}
	var fps []string
	for _, k := range h.seen {
		fps = append(fps, fmt.Sprintf("%s %s", ssh.FingerprintSHA256(k), k.Type()))
	}
	return fmt.Sprintf("the server's host key does not match config.host_key_fingerprint (it showed %s); "+
		"if the key was changed on purpose, check it and pin the new fingerprint", joinAnd(fps))
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return fmt.Sprintf("%s and %s", joinComma(s[:len(s)-1]), s[len(s)-1])
}

func joinComma(s []string) string {
	out := s[0]
	for _, x := range s[1:] {
		out += ", " + x
	}
	return out
}
