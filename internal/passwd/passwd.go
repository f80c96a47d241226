// Package passwd hashes and verifies local account passwords with argon2id
// (and verifies the bcrypt hashes of accounts imported from the original
// service, which the first sign-in replaces).
//
// A hash is stored as a PHC-style string,
//
//	$argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<key>
//
// (salt and key in unpadded standard base64), so hashes made with older
// parameters still verify after Default changes; NeedsRehash says when a
// hash should be replaced by one made with the current parameters.
package passwd

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/bcrypt"
)

// Params are argon2id's cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes over the memory
	Threads uint8  // lanes
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// Default costs about 40 ms of CPU for one hash or verification on the
// 2-core reference machine (make bench prints the figure beside its
// 100 ms target): 19 MiB, 2 passes, 1 lane is OWASP's argon2id minimum
// (m=19456, t=2, p=1). One lane keeps a sign-in to one core, so a burst
// of sign-ins cannot take every core from the rest of the service.
var Default = Params{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// Caps on the parameters a stored hash may carry: a hash is read from the
// database, and a tampered one must not make a verification take gigabytes
// or minutes.
const (
	maxMemory  = 1 << 20 // 1 GiB in KiB
	maxTime    = 64
	maxThreads = 64
	maxKeyLen  = 1024
	// MaxPasswordBytes bounds what is hashed: argon2 reads all of it, and
	// nobody types more.
	MaxPasswordBytes = 1024
)

// ErrMalformed is returned for a stored hash that is not one of ours.
var ErrMalformed = errors.New("passwd: malformed hash")

// Hash returns the encoded argon2id hash of password with Default.
func Hash(password string) (string, error) { return HashWith(password, Default) }

// HashWith returns the encoded argon2id hash of password with p and a
// fresh random salt.
func HashWith(password string, p Params) (string, error) {
	if len(password) > MaxPasswordBytes {
		return "", fmt.Errorf("passwd: password longer than %d bytes", MaxPasswordBytes)
	}
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// Verify reports whether password matches encoded, comparing the keys in
// constant time. A malformed hash is an error, never a match.
func Verify(password, encoded string) (bool, error) {
	if isBcrypt(encoded) {
		return verifyBcrypt(password, encoded)
	}
	p, salt, key, err := decode(encoded)
	if err != nil {
		return false, err
	}
	if len(password) > MaxPasswordBytes {
		return false, nil
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// isBcrypt reports a bcrypt hash ($2a$, $2b$, $2y$): the original
// service's, kept by the database wizard's import so that its users sign
// in with their passwords; the first sign-in replaces it (NeedsRehash).
func isBcrypt(encoded string) bool {
	return len(encoded) == 60 && (strings.HasPrefix(encoded, "$2a$") || strings.HasPrefix(encoded, "$2b$") || strings.HasPrefix(encoded, "$2y$"))
}

// verifyBcrypt checks password against a bcrypt hash (constant time
// inside bcrypt); a malformed one is an error, never a match.
func verifyBcrypt(password, encoded string) (bool, error) {
	if len(password) > MaxPasswordBytes {
		return false, nil
	}
	err := bcrypt.CompareHashAndPassword([]byte(encoded), []byte(password))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, bcrypt.ErrMismatchedHashAndPassword), errors.Is(err, bcrypt.ErrPasswordTooLong):
		return false, nil
	}
	return false, ErrMalformed
}

// NeedsRehash reports whether encoded was made with other parameters than
// Default (or is not ours), so a successful sign-in should store a new hash.
func NeedsRehash(encoded string) bool {
	p, salt, key, err := decode(encoded)
	if err != nil {
		return true
	}
	d := Default
	return p.Memory != d.Memory || p.Time != d.Time || p.Threads != d.Threads ||
		uint32(len(salt)) != d.SaltLen || uint32(len(key)) != d.KeyLen
}

func decode(encoded string) (Params, []byte, []byte, error) {
	var p Params
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" {
		return p, nil, nil, ErrMalformed
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return p, nil, nil, ErrMalformed
	}
	var threads uint32
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &threads); err != nil {
		return p, nil, nil, ErrMalformed
	}
	if p.Memory < 8 || p.Memory > maxMemory || p.Time < 1 || p.Time > maxTime || threads < 1 || threads > maxThreads {
		return p, nil, nil, ErrMalformed
	}
	p.Threads = uint8(threads)
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil || len(salt) < 8 {
		return p, nil, nil, ErrMalformed
	}
	key, err := enc.DecodeString(parts[5])
	if err != nil || len(key) < 16 || len(key) > maxKeyLen {
		return p, nil, nil, ErrMalformed
	}
	p.SaltLen, p.KeyLen = uint32(len(salt)), uint32(len(key))
	return p, salt, key, nil
}

// Hasher is Hash, Verify and NeedsRehash as methods with Default, for the
// stores that take a password hasher (docflow.PasswordHasher).
type Hasher struct{}

func (Hasher) Hash(password string) (string, error)       { return Hash(password) }
func (Hasher) Verify(password, hash string) (bool, error) { return Verify(password, hash) }
func (Hasher) NeedsRehash(hash string) bool               { return NeedsRehash(hash) }
