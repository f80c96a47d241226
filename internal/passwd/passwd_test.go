package passwd

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestHashVerify(t *testing.T) {
	h, err := Hash("correct horse ✓")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if ok, err := Verify("correct horse ✓", h); !ok || err != nil {
		t.Fatalf("right password: %v %v", ok, err)
	}
	if ok, err := Verify("correct horse", h); ok || err != nil {
		t.Fatalf("wrong password: %v %v", ok, err)
	}
	h2, _ := Hash("correct horse ✓")
	if h2 == h {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	if NeedsRehash(h) {
		t.Fatal("a Default hash needs no rehash")
	}
}

func TestOldParametersStillVerify(t *testing.T) {
	old := Params{Memory: 8 * 1024, Time: 1, Threads: 2, SaltLen: 8, KeyLen: 16}
	h, err := HashWith("s3cret-pass", old)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := Verify("s3cret-pass", h); !ok || err != nil {
		t.Fatalf("old parameters: %v %v", ok, err)
	}
	if !NeedsRehash(h) {
		t.Fatal("a hash with old parameters needs a rehash")
	}
}

func TestMalformedHashes(t *testing.T) {
	for _, h := range []string{"", "plain", "$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=18$m=19456,t=2,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=99999999,t=2,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5", // 95 GiB: refused
		"$argon2id$v=19$m=19456,t=1000,p=1$c2FsdHNhbHQ$a2V5a2V5a2V5a2V5a2V5",
		"$argon2id$v=19$m=19456,t=2,p=1$!!$a2V5a2V5a2V5a2V5a2V5"} {
		if ok, err := Verify("x", h); ok || err == nil {
			t.Errorf("%q: %v %v, want an error", h, ok, err)
		}
		if !NeedsRehash(h) {
			t.Errorf("%q needs a rehash", h)
		}
	}
	if _, err := Hash(strings.Repeat("x", MaxPasswordBytes+1)); err == nil {
		t.Fatal("an over-long password was hashed")
	}
}

// TestVerifyCost keeps one verification under the 100 ms budget; it is
// loose (race builds and a loaded machine are slower) and make bench
// prints the real figure.
func TestVerifyCost(t *testing.T) {
	h, _ := Hash("benchmark-password")
	best := time.Hour
	for range 3 {
		start := time.Now()
		Verify("benchmark-password", h) //nolint:errcheck
		best = min(best, time.Since(start))
	}
	t.Logf("one verification: %v", best)
	if best > time.Second {
		t.Fatalf("one verification took %v", best)
	}
}

func BenchmarkVerify(b *testing.B) {
	h, _ := Hash("benchmark-password")
	for b.Loop() {
		Verify("benchmark-password", h) //nolint:errcheck
	}
}

// An account imported from the original service signs in with its bcrypt
// hash, and the hash is then replaced.
func TestVerifyImportedBcrypt(t *testing.T) {
	h, err := bcrypt.GenerateFromPassword([]byte("correct horse battery"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := Verify("correct horse battery", string(h)); !ok || err != nil {
		t.Fatalf("right password: %v, %v", ok, err)
	}
	if ok, err := Verify("wrong password", string(h)); ok || err != nil {
		t.Fatalf("wrong password: %v, %v", ok, err)
	}
	if !NeedsRehash(string(h)) {
		t.Fatal("a bcrypt hash must be replaced at the next sign-in")
	}
}
