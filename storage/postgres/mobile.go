package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ProfileFacts reads what the phone app's profile of userID is made of:
// its profile (display name, language), its local account (the one whose
// e-mail is the user id) and its SSO identity (verified e-mail, picture).
// A user with none of them has empty facts.
func (p *ProfileStore) ProfileFacts(ctx context.Context, userID string) (docflow.ProfileFacts, error) {
	var f docflow.ProfileFacts
	var profileName, localEmail, localName, ssoEmail, picture *string
	err := p.db.Pool.QueryRow(ctx, `SELECT
			(SELECT display_name FROM user_profiles WHERE user_id = $1),
			(SELECT preferred_language FROM user_profiles WHERE user_id = $1),
			(SELECT email FROM local_users WHERE lower(email) = lower($1) LIMIT 1),
			(SELECT display_name FROM local_users WHERE lower(email) = lower($1) LIMIT 1),
			(SELECT email FROM sso_users WHERE user_id = $1),
			(SELECT picture FROM sso_users WHERE user_id = $1)`, userID).
		Scan(&profileName, &f.PreferredLanguage, &localEmail, &localName, &ssoEmail, &picture)
	if err != nil {
		return f, fmt.Errorf("profile facts: %w", dbErr(err))
	}
	f.ProfileName, f.LocalEmail, f.LocalName = deref(profileName), deref(localEmail), deref(localName)
	f.SSOEmail, f.SSOPicture = deref(ssoEmail), deref(picture)
	return f, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SetPreferredLanguage stores userID's language preference (checked by
// the caller), creating the user's profile first when it has none (which
// emits user.signup with source "self", as any new profile does).
func (p *ProfileStore) SetPreferredLanguage(ctx context.Context, userID, lang string) error {
	now := p.db.Now()
	err := pgx.BeginFunc(ctx, p.db.Pool, func(tx pgx.Tx) error {
		if _, err := ensureProfileTx(ctx, tx, p.events, userID, "", "self", now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE user_profiles SET preferred_language = $2, updated_at = $3 WHERE user_id = $1`, userID, lang, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("set preferred language: %w", dbErr(err))
	}
	return nil
}

// QRChallengeStore keeps the QR login's challenges (qr_challenges, the
// claim's columns from migration 0700),
// known by the SHA-256 of their token only, so that any api process
// answers the page's polling and the phone's claim.
type QRChallengeStore struct{ db *DB }

// NewQRChallengeStore returns the QR challenge store on db.
func NewQRChallengeStore(db *DB) *QRChallengeStore {
	if db == nil {
		panic("postgres: NewQRChallengeStore needs a DB")
	}
	return &QRChallengeStore{db: db}
}

// qrKeep is how long a challenge stays after it expired, so that a page
// still polling reads "expired" or "claimed" rather than "unknown".
const qrKeep = time.Hour

// CreateQRChallenge stores q, and removes challenges expired more than
// qrKeep ago on the way.
func (s *QRChallengeStore) CreateQRChallenge(ctx context.Context, q docflow.QRChallenge) error {
	if q.TokenHash == "" || q.UserID == "" {
		return docflow.Errorf(docflow.EINVALID, "a QR challenge needs a token hash and a user")
	}
	_, err := s.db.Pool.Exec(ctx, `WITH gone AS (DELETE FROM qr_challenges WHERE expires_at < $1)
		INSERT INTO qr_challenges (token_hash, user_id, created_at, expires_at) VALUES ($2, $3, $4, $5)`,
		q.CreatedAt.Add(-qrKeep), q.TokenHash, q.UserID, q.CreatedAt, q.ExpiresAt)
	if err != nil {
		return fmt.Errorf("create qr challenge: %w", dbErr(err))
	}
	return nil
}

const qrCols = `token_hash, user_id, created_at, expires_at, claimed_at, device_name, token_id`

func scanQR(row pgx.Row) (*docflow.QRChallenge, error) {
	var q docflow.QRChallenge
	err := row.Scan(&q.TokenHash, &q.UserID, &q.CreatedAt, &q.ExpiresAt, &q.ClaimedAt, &q.DeviceName, &q.TokenID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Unknown QR login challenge")
	}
	if err != nil {
		return nil, fmt.Errorf("qr challenge: %w", dbErr(err))
	}
	return &q, nil
}

// FindQRChallenge returns the challenge with hash tokenHash, or ENOTFOUND.
func (s *QRChallengeStore) FindQRChallenge(ctx context.Context, tokenHash string) (*docflow.QRChallenge, error) {
	return scanQR(s.db.Pool.QueryRow(ctx, `SELECT `+qrCols+` FROM qr_challenges WHERE token_hash = $1`, tokenHash))
}

// ClaimQRChallenge claims the challenge with hash tokenHash at at for
// deviceName, once: claimed true when this call claimed it (pending until
// then, not expired at at). Otherwise the challenge is returned as it is
// (claimed false), or ENOTFOUND when unknown. Two phones racing: one
// claims, the other reads it claimed.
func (s *QRChallengeStore) ClaimQRChallenge(ctx context.Context, tokenHash, deviceName string, at time.Time) (*docflow.QRChallenge, bool, error) {
	q, err := scanQR(s.db.Pool.QueryRow(ctx, `UPDATE qr_challenges SET claimed_at = $2, device_name = $3, status = 'claimed'
		WHERE token_hash = $1 AND claimed_at IS NULL AND expires_at > $2 RETURNING `+qrCols, tokenHash, at, deviceName))
	if err == nil {
		return q, true, nil
	}
	if docflow.ErrorCode(err) != docflow.ENOTFOUND {
		return nil, false, err
	}
	q, err = s.FindQRChallenge(ctx, tokenHash)
	return q, false, err
}

// SetQRChallengeToken records the API token a claim issued.
func (s *QRChallengeStore) SetQRChallengeToken(ctx context.Context, tokenHash string, tokenID int64) error {
	if _, err := s.db.Pool.Exec(ctx, `UPDATE qr_challenges SET token_id = $2 WHERE token_hash = $1`, tokenHash, tokenID); err != nil {
		return fmt.Errorf("qr challenge token: %w", dbErr(err))
	}
	return nil
}
