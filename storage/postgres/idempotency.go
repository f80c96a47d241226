package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// IdempotencyStore is docflow.IdempotencyStore on the idempotency_keys
// table (migration 0820). Times are the database's clock, the one every
// process shares.
type IdempotencyStore struct{ db *DB }

// NewIdempotencyStore returns the idempotency key store on db.
func NewIdempotencyStore(db *DB) *IdempotencyStore {
	if db == nil {
		panic("postgres: NewIdempotencyStore needs a DB")
	}
	return &IdempotencyStore{db: db}
}

var _ docflow.IdempotencyStore = (*IdempotencyStore)(nil)

// ClaimIdempotencyKey implements docflow.IdempotencyStore. The insert and
// the take-over of an expired or abandoned key are one statement, so of
// two requests racing for a key exactly one claims it.
func (s *IdempotencyStore) ClaimIdempotencyKey(ctx context.Context, user, key, requestHash string, lease time.Duration) (*docflow.IdempotentReply, bool, error) {
	// A key released between the two statements is claimed on the next
	// round; three rounds cover any such race.
	for range 3 {
		var claimed bool
		err := s.db.Pool.QueryRow(ctx, `INSERT INTO idempotency_keys
			(user_id, key, request_hash, state, locked_until, expires_at)
			VALUES ($1, $2, $3, 'running', now() + $4::interval, now() + $5::interval)
			ON CONFLICT (user_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash,
				state = 'running', status = 0, content_type = '', body = NULL,
				locked_until = EXCLUDED.locked_until, created_at = now(), expires_at = EXCLUDED.expires_at
			WHERE idempotency_keys.expires_at < now()
				OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_until < now()
					AND NOT EXISTS (SELECT 1 FROM files WHERE files.id = idempotency_keys.file_id))
			RETURNING true`, user, key, requestHash, lease, docflow.IdempotencyKeyTTL).Scan(&claimed)
		if err == nil {
			return nil, true, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, false, fmt.Errorf("claim idempotency key: %w", dbErr(err))
		}
		var r docflow.IdempotentReply
		var state string
		var fileID *int64
		var lapsed bool
		err = s.db.Pool.QueryRow(ctx, `SELECT state, request_hash, status, content_type, coalesce(body, ''),
				file_id, locked_until < now()
			FROM idempotency_keys WHERE user_id = $1 AND key = $2`, user, key).
			Scan(&state, &r.RequestHash, &r.Status, &r.ContentType, &r.Body, &fileID, &lapsed)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, false, fmt.Errorf("read idempotency key: %w", dbErr(err))
		}
		r.Running = state == "running"
		if r.Running && lapsed && fileID != nil {
			created, err := s.created(ctx, *fileID)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // deleted meanwhile: the next round claims the key
			}
			if err != nil {
				return nil, false, fmt.Errorf("read idempotency key's file: %w", dbErr(err))
			}
			r.Running, r.Created = false, created
		}
		return &r, false, nil
	}
	return nil, false, docflow.Errorf(docflow.EUNAVAILABLE, "The idempotency key is changing hands; retry the request")
}

// created is the intake result of file id as its request recorded it:
// the file, its run, and the original it duplicates when it was recorded
// as a duplicate.
func (s *IdempotencyStore) created(ctx context.Context, id int64) (*docflow.IntakeResult, error) {
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files f WHERE f.id = $1`, id), false)
	if err != nil {
		return nil, err
	}
	res := &docflow.IntakeResult{File: f, TaskID: f.TaskID}
	if f.Status == docflow.StatusDuplicate && f.DuplicateOf != nil {
		orig, err := scanFile(s.db.Pool.QueryRow(ctx, `SELECT `+fileCols+` FROM files f WHERE f.id = $1`, *f.DuplicateOf), false)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		res.DuplicateOf = orig
	}
	return res, nil
}

// idempotencyFileUpdate remembers the file a claimed key's request
// recorded, in the transaction that records it (IngestRecord.Idempotency).
const idempotencyFileUpdate = `UPDATE idempotency_keys SET file_id = $3, request_hash = $4
	WHERE user_id = $1 AND key = $2 AND state = 'running'`

// idempotencyFileArgs are idempotencyFileUpdate's arguments.
func idempotencyFileArgs(c docflow.IdempotencyClaim, fileID int64, contentHash string) []any {
	return []any{c.User, c.Key, fileID, c.HashFor(contentHash)}
}

// ExtendIdempotencyKey implements docflow.IdempotencyStore.
func (s *IdempotencyStore) ExtendIdempotencyKey(ctx context.Context, user, key string, lease time.Duration) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE idempotency_keys SET locked_until = now() + $3::interval
		WHERE user_id = $1 AND key = $2 AND state = 'running'`, user, key, lease)
	if err != nil {
		return fmt.Errorf("extend idempotency key: %w", dbErr(err))
	}
	return nil
}

// CompleteIdempotencyKey implements docflow.IdempotencyStore.
func (s *IdempotencyStore) CompleteIdempotencyKey(ctx context.Context, user, key, requestHash string, status int, contentType string, body []byte) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'completed', request_hash = $3,
		status = $4, content_type = $5, body = $6 WHERE user_id = $1 AND key = $2`,
		user, key, requestHash, status, contentType, body)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", dbErr(err))
	}
	return nil
}

// ReleaseIdempotencyKey implements docflow.IdempotencyStore.
func (s *IdempotencyStore) ReleaseIdempotencyKey(ctx context.Context, user, key string) error {
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND state = 'running'`, user, key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", dbErr(err))
	}
	return nil
}

// SweepIdempotencyKeys implements docflow.IdempotencyStore.
func (s *IdempotencyStore) SweepIdempotencyKeys(ctx context.Context) (int64, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE expires_at < now()`)
	if err != nil {
		return 0, fmt.Errorf("sweep idempotency keys: %w", dbErr(err))
	}
	return tag.RowsAffected(), nil
}
