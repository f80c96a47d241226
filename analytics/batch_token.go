package analytics

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

// retryBatch is the batch a Batcher writes again after a failure.
type retryBatch struct {
	token   string
	attempt int
	rows    int // > 0 while the next write must retry these leading rows
}

type batchKey struct{}

type batchInfo struct {
	token   string
	attempt int
}

func withBatch(ctx context.Context, token string, attempt int) context.Context {
	return context.WithValue(ctx, batchKey{}, batchInfo{token, attempt})
}

// BatchToken returns, inside a WriteFunc, the batch's token and which
// attempt at it this is (1 for the first). A failed write of a whole batch
// is retried with exactly the same rows under the same token, so a store
// whose write may have landed before the error reached the client (a
// timeout while waiting for the server's answer) can look the token up and
// report success instead of writing the rows twice. ok is false outside a
// Batcher's write.
func BatchToken(ctx context.Context) (token string, attempt int, ok bool) {
	b, ok := ctx.Value(batchKey{}).(batchInfo)
	return b.token, b.attempt, ok
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return "docflow-" + hex.EncodeToString(b[:])
}
