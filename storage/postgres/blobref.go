package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// This file holds the blob references: which blobs the file records
// still use, and the lock of the blob sweep.

// blobUsed is the condition that a file references the blob key expr: as
// its original, its processed version or its metadata sidecar (each lookup
// on its own index). The tests that original_blob and processed_blob are
// not empty repeat the predicates of their partial indexes: without them
// the planner cannot use those indexes when expr is a column or a generic
// plan's parameter, and scans the table.
func blobUsed(expr string) string {
	return `(EXISTS (SELECT 1 FROM files WHERE original_blob <> '' AND original_blob = ` + expr + `)
	OR EXISTS (SELECT 1 FROM files WHERE processed_blob <> '' AND processed_blob = ` + expr + `)
	OR EXISTS (SELECT 1 FROM files WHERE ai_metadata ? 'metadata_sidecar' AND ai_metadata->>'metadata_sidecar' = ` + expr + `))`
}

// BlobInUse reports whether any file references key.
func (s *FileStore) BlobInUse(ctx context.Context, key string) (bool, error) {
	used, err := s.BlobsInUse(ctx, []string{key})
	if err != nil {
		return false, err
	}
	return used[key], nil
}

var blobsInUseQuery = `SELECT b, ` + blobUsed("b") + ` FROM unnest($1::text[]) AS b`

// BlobsInUse reports, for each of keys, whether any file references it,
// in one statement (the blob sweep asks a few hundred keys at a time).
func (s *FileStore) BlobsInUse(ctx context.Context, keys []string) (map[string]bool, error) {
	out := make(map[string]bool, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, blobsInUseQuery, keys)
	if err != nil {
		return nil, fmt.Errorf("blobs in use: %w", err)
	}
	var key string
	var used bool
	_, err = pgx.ForEachRow(rows, []any{&key, &used}, func() error {
		out[key] = used
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("blobs in use: %w", err)
	}
	return out, nil
}

// blobSweepLock is the session advisory lock key held while sweeping
// unreferenced blobs, so one process sweeps at a time (migrationLock is
// 7_245_001; 7245002 is the class of lockOwnerRules' two-key locks).
const blobSweepLock = 7_245_003

// TryLockBlobSweep takes the blob sweep's session advisory lock on a
// connection of its own, without waiting. ok is false when another session
// holds it. Otherwise the caller sweeps and then calls unlock, which
// releases the lock and the connection.
func (s *FileStore) TryLockBlobSweep(ctx context.Context) (unlock func(), ok bool, err error) {
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("blob sweep lock: %w", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, blobSweepLock).Scan(&ok); err != nil {
		// Whether the lock was taken is unknown: end the session, which
		// releases it if it was.
		conn.Conn().Close(context.Background()) //nolint:errcheck
		conn.Release()
		return nil, false, fmt.Errorf("blob sweep lock: %w", err)
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	unlock = func() {
		uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(uctx, `SELECT pg_advisory_unlock($1)`, blobSweepLock); err != nil {
			// The lock lives as long as the session: end it rather than
			// hand the pool a connection that still holds the lock.
			conn.Conn().Close(uctx) //nolint:errcheck
		}
		conn.Release()
	}
	return unlock, true, nil
}
