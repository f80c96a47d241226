package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuthModeStore remembers the authentication mode the HTTP processes
// started in (table auth_mode, one row), so that the first start with
// AUTH_ENABLED=true after single-user mode can list what was made while
// anyone who reached the server acted as the administrator.
type AuthModeStore struct{ db *DB }

// NewAuthModeStore returns the store on db.
func NewAuthModeStore(db *DB) *AuthModeStore {
	if db == nil {
		panic("postgres: NewAuthModeStore needs a DB")
	}
	return &AuthModeStore{db: db}
}

// SingleUserLeftovers are the objects made during a single-user period
// that still work: each kind's count and up to leftoverExamples of them,
// described for an administrator.
type SingleUserLeftovers struct {
	// Since is when the period began (nil: at the beginning); Until when
	// authentication was turned on.
	Since *time.Time `json:"since,omitempty"`
	Until time.Time  `json:"until"`
	// Tokens are active API tokens ("name" prefix…, owner).
	Tokens Leftovers `json:"tokens"`
	// Hooks are active automation hooks (target URL, owner; whether it
	// asked for every user's events).
	Hooks Leftovers `json:"hooks"`
	// Webhooks are active webhooks (URL).
	Webhooks Leftovers `json:"webhooks"`
	// Admins are active local accounts with is_admin, made or changed in
	// the period (e-mail).
	Admins Leftovers `json:"admins"`
}

// Leftovers of one kind: how many, and the first few.
type Leftovers struct {
	Count    int      `json:"count"`
	Examples []string `json:"examples"`
}

// Empty reports whether nothing is left to review.
func (l *SingleUserLeftovers) Empty() bool {
	return l.Tokens.Count+l.Hooks.Count+l.Webhooks.Count+l.Admins.Count == 0
}

// leftoverExamples is how many objects of each kind are named.
const leftoverExamples = 10

// reviewShownFor is how long after authentication was turned on an HTTP
// process that starts still shows the review: the api processes of one
// deployment start together, and only one of them made it.
const reviewShownFor = 24 * time.Hour

// RecordStart records that an HTTP process starts with authentication on
// (authEnabled) or off, at now. With it on, after a start with it off (or
// with no start recorded: an instance upgraded to this version), it lists
// what the single-user period left and keeps that list; it returns the
// list while it is recent (reviewShownFor), nil otherwise or when the
// list is empty. Processes starting at once agree: the row is locked.
func (s *AuthModeStore) RecordStart(ctx context.Context, authEnabled bool, now time.Time) (*SingleUserLeftovers, error) {
	var out *SingleUserLeftovers
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var (
			found, wasOn bool
			since, onAt  *time.Time
			review       []byte
		)
		err := tx.QueryRow(ctx, `SELECT auth_enabled, single_user_since, auth_enabled_at, review FROM auth_mode FOR UPDATE`).
			Scan(&wasOn, &since, &onAt, &review)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return err
		default:
			found = true
		}
		switch {
		case !authEnabled && (!found || wasOn):
			// A single-user period begins (with no row: it began at the start).
			var from *time.Time
			if found {
				from = &now
			}
			_, err = tx.Exec(ctx, `INSERT INTO auth_mode (auth_enabled, single_user_since) VALUES (FALSE, $1)
				ON CONFLICT (id) DO UPDATE SET auth_enabled = FALSE, single_user_since = EXCLUDED.single_user_since`, from)
			return err
		case !authEnabled:
			return nil
		case found && wasOn:
			// Already on: show what the switch found while it is recent.
			if onAt == nil || now.Sub(*onAt) > reviewShownFor || len(review) == 0 {
				return nil
			}
			var l SingleUserLeftovers
			if err := json.Unmarshal(review, &l); err != nil {
				return fmt.Errorf("auth mode review: %w", err)
			}
			if !l.Empty() {
				out = &l
			}
			return nil
		}
		// Authentication is turned on: list what the period left.
		l, err := leftoversTx(ctx, tx, since, now)
		if err != nil {
			return err
		}
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO auth_mode (auth_enabled, single_user_since, auth_enabled_at, review)
			VALUES (TRUE, NULL, $1, $2)
			ON CONFLICT (id) DO UPDATE SET auth_enabled = TRUE, auth_enabled_at = $1, review = $2`, now, string(b)); err != nil {
			return err
		}
		if !l.Empty() {
			out = l
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record auth mode: %w", dbErr(err))
	}
	return out, nil
}

// leftoversTx lists what was made from since (nil: ever) until now and
// still works.
func leftoversTx(ctx context.Context, tx pgx.Tx, since *time.Time, now time.Time) (*SingleUserLeftovers, error) {
	l := &SingleUserLeftovers{Since: since, Until: now}
	from := time.Time{}
	if since != nil {
		from = *since
	}
	kinds := []struct {
		dst *Leftovers
		q   string
	}{
		{&l.Tokens, `SELECT '#' || id || ' "' || name || '" ' || token_prefix || '…, owner ' || owner_id FROM api_tokens
			WHERE is_active AND (expires_at IS NULL OR expires_at > $2) AND created_at >= $1 AND created_at < $2 ORDER BY id`},
		{&l.Hooks, `SELECT '#' || id || ' ' || target_url || ', owner ' || owner_id || CASE WHEN sees_all THEN ', every user''s events' ELSE '' END
			FROM automation_hooks WHERE is_active AND created_at >= $1 AND created_at < $2 ORDER BY sees_all DESC, id`},
		{&l.Webhooks, `SELECT '#' || id || ' ' || url FROM webhooks WHERE is_active AND created_at >= $1 AND created_at < $2 ORDER BY id`},
		{&l.Admins, `SELECT email FROM local_users WHERE is_admin AND is_active
			AND ((created_at >= $1 AND created_at < $2) OR (updated_at >= $1 AND updated_at < $2)) ORDER BY id`},
	}
	for _, k := range kinds {
		rows, err := tx.Query(ctx, k.q, from, now)
		if err != nil {
			return nil, err
		}
		k.dst.Examples = []string{}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				rows.Close()
				return nil, err
			}
			if k.dst.Count < leftoverExamples {
				k.dst.Examples = append(k.dst.Examples, s)
			}
			k.dst.Count++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return l, nil
}
