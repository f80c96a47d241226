package docflow

import (
	"context"
	"io"
)

// BlobInfo describes a stored blob.
type BlobInfo struct {
	Key  string // hex SHA-256 of the content
	Size int64
	// Created is true when this Put stored new content, false when the
	// blob already existed. A caller that abandons the upload removes the
	// blob only when it created it.
	Created bool
}

// BlobStore keeps originals and processed versions, content-addressed.
type BlobStore interface {
	// Put streams r into the store while hashing it. The blob appears under
	// its final key only when complete (temp file, fsync, rename). maxSize
	// > 0 aborts with ETOOLARGE past that many bytes, leaving nothing behind.
	Put(ctx context.Context, r io.Reader, maxSize int64) (BlobInfo, error)
	// Open returns ENOTFOUND when the blob is missing.
	Open(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Path returns a local filesystem path for the blob (local store; other
	// stores copy to a temp file). ENOTFOUND when missing.
	Path(ctx context.Context, key string) (string, error)
	Exists(ctx context.Context, key string) (bool, error)
	Delete(ctx context.Context, key string) error
}
