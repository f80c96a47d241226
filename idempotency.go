package docflow

import (
	"context"
	"time"
)

// Idempotency keys: a client names a write with an Idempotency-Key header
// so that a retry of it answers what the first attempt answered and
// creates nothing.

// IdempotencyKeyTTL is how long a key is remembered after its first use.
const IdempotencyKeyTTL = 24 * time.Hour

// MaxIdempotencyKeyLen bounds a key's length in bytes.
const MaxIdempotencyKeyLen = 255

// ValidIdempotencyKey reports whether key is 1 to MaxIdempotencyKeyLen
// printable ASCII characters (space to tilde).
func ValidIdempotencyKey(key string) bool {
	if key == "" || len(key) > MaxIdempotencyKeyLen {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x20 || key[i] > 0x7e {
			return false
		}
	}
	return true
}

// IdempotentReply is what a key holds: either a request still running
// (Running), or the answer of the completed one.
type IdempotentReply struct {
	Running     bool
	RequestHash string // SHA-256 of method, path and body content hash
	Status      int
	ContentType string
	Body        []byte
}

// IdempotencyStore keeps idempotency keys per user, shared by every
// process.
type IdempotencyStore interface {
	// ClaimIdempotencyKey reserves (user, key) for a request running at
	// most lease, and returns claimed=true; or returns the reply the key
	// holds. An expired key, or one whose running request's lease ended,
	// is claimed anew. requestHash may be "" when not known yet.
	ClaimIdempotencyKey(ctx context.Context, user, key, requestHash string, lease time.Duration) (reply *IdempotentReply, claimed bool, err error)
	// ExtendIdempotencyKey moves the lease of a claimed key whose request
	// still runs to lease from now; a completed or released key is left
	// alone.
	ExtendIdempotencyKey(ctx context.Context, user, key string, lease time.Duration) error
	// CompleteIdempotencyKey stores the answer of the claimed key.
	CompleteIdempotencyKey(ctx context.Context, user, key, requestHash string, status int, contentType string, body []byte) error
	// ReleaseIdempotencyKey forgets a claimed key whose request failed, so
	// a retry runs it again.
	ReleaseIdempotencyKey(ctx context.Context, user, key string) error
	// SweepIdempotencyKeys deletes expired keys and returns how many.
	SweepIdempotencyKeys(ctx context.Context) (int64, error)
}
