package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ProfileStore owns the user_profiles table: profiles, their statistics
// and the user events their changes emit, written to the outbox through
// the docflow.EventEncoder it is handed (storage builds no messages).
type ProfileStore struct {
	db     *DB
	events docflow.EventEncoder
}

var _ docflow.Signups = (*ProfileStore)(nil)

// NewProfileStore returns the profile store on db; events encodes the
// user events it writes (streams.EncodeEvent).
func NewProfileStore(db *DB, events docflow.EventEncoder) *ProfileStore {
	if db == nil || events == nil {
		panic("postgres: NewProfileStore needs a DB and an EventEncoder")
	}
	return &ProfileStore{db: db, events: events}
}

// EnsureProfile creates userID's profile when missing and emits
// user.signup in the same transaction.
func (p *ProfileStore) EnsureProfile(ctx context.Context, userID, displayName, source string) (bool, error) {
	var created bool
	err := pgx.BeginFunc(ctx, p.db.Pool, func(tx pgx.Tx) error {
		var err error
		created, err = ensureProfileTx(ctx, tx, p.events, userID, displayName, source, p.db.Now())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("ensure profile: %w", err)
	}
	return created, nil
}

// ensureProfileTx is EnsureProfile inside the caller's transaction, for
// stores that create a user and its profile together (local accounts).
func ensureProfileTx(ctx context.Context, tx pgx.Tx, enc docflow.EventEncoder, userID, displayName, source string, now time.Time) (bool, error) {
	if userID == "" {
		return false, docflow.Errorf(docflow.EINVALID, "user id is required")
	}
	var dn *string
	if displayName != "" {
		dn = &displayName
	}
	tag, err := tx.Exec(ctx, `INSERT INTO user_profiles (user_id, display_name, created_at, updated_at)
		VALUES ($1, $2, $3, $3) ON CONFLICT (user_id) DO NOTHING`, userID, dn, now)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	msg, err := enc(docflow.EventUserSignup, &userID,
		map[string]any{"user_id": userID, "display_name": displayName, "source": source}, now)
	if err != nil {
		return false, err
	}
	return true, Enqueue(ctx, tx, msg)
}
