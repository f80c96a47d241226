package docflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
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

// IdempotentRequestHash is a request's hash as a key remembers it:
// SHA-256 over the method, the path (without a trailing slash, which
// routes ignore) and the hash of the body's content.
func IdempotentRequestHash(method, path, bodyHash string) string {
	h := sha256.Sum256([]byte(method + "\n" + strings.TrimSuffix(path, "/") + "\n" + bodyHash))
	return hex.EncodeToString(h[:])
}

// IdempotentUploadBody is an upload's body hash: the file part's name as
// the client sent it and the content's hash (File.FileHash).
func IdempotentUploadBody(filename, contentHash string) string {
	return filename + "\n" + contentHash
}

// IdempotencyClaim names the key a request claimed, handed to intake so
// that storage records the document the request creates with the key, in
// the same transaction: a process killed between that commit and storing
// its answer leaves a key that knows its document, and the client's retry
// is answered with it instead of creating a second one.
type IdempotencyClaim struct {
	User, Key string
	// RequestHash is the request's hash when it is known before the body
	// is read (process-url); "" for an upload, whose hash is
	// IdempotentRequestHash(Method, Path, IdempotentUploadBody(Filename,
	// content hash)) once the content is stored (HashFor).
	RequestHash            string
	Method, Path, Filename string
}

// HashFor is the request's hash for a body of contentHash.
func (c IdempotencyClaim) HashFor(contentHash string) string {
	if c.RequestHash != "" {
		return c.RequestHash
	}
	return IdempotentRequestHash(c.Method, c.Path, IdempotentUploadBody(c.Filename, contentHash))
}

// IdempotentReply is what a key holds: either a request still running
// (Running), or the answer of the completed one, or (Created) the document
// of a request whose process died before it answered.
type IdempotentReply struct {
	Running     bool
	RequestHash string // IdempotentRequestHash
	Status      int
	ContentType string
	Body        []byte
	// Created is the document an abandoned request recorded (its lease
	// ended, its answer never stored): the repeat answers as the request
	// would have, from it, and stores that answer.
	Created *IntakeResult
}

// IdempotencyStore keeps idempotency keys per user, shared by every
// process.
type IdempotencyStore interface {
	// ClaimIdempotencyKey reserves (user, key) for a request running at
	// most lease, and returns claimed=true; or returns the reply the key
	// holds. An expired key, or one whose running request's lease ended
	// before it recorded a document, is claimed anew; one whose request
	// recorded its document (IngestRecord.Idempotency) returns it as
	// reply.Created. requestHash may be "" when not known yet.
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
