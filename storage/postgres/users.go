package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// This file answers the look-ups every user may make about the others:
// the users search (sharing and mention pickers) and the mentionable list.

// lowerQuery is a search text as the queries compare it.
func lowerQuery(q string) string { return strings.ToLower(strings.TrimSpace(q)) }

// SearchUsers returns up to limit user ids that contain q in their id,
// display name, or their local account's e-mail or username; the users
// are those of the admin list (profiles and owners of documents) and the
// local accounts. A local account's user id is its e-mail.
func (p *ProfileStore) SearchUsers(ctx context.Context, q string, limit int) ([]string, error) {
	if limit <= 0 {
		limit = docflow.UserSearchDefault
	}
	rows, err := p.db.Pool.Query(ctx, `SELECT user_id FROM (`+usersCTE+`) t
		UNION
		SELECT lu.email FROM local_users lu
		WHERE strpos(lower(lu.email), $1) > 0 OR strpos(lower(lu.username), $1) > 0 OR strpos(lower(lu.display_name), $1) > 0
		ORDER BY 1 LIMIT $2`, lowerQuery(q), limit)
	if err != nil {
		return nil, fmt.Errorf("search users: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("search users: %w", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// Mentionable returns the non-blocked profiles by display name (the user
// id for those without one), at most docflow.MentionableMax.
func (p *ProfileStore) Mentionable(ctx context.Context) ([]docflow.Mentionable, error) {
	rows, err := p.db.Pool.Query(ctx, `SELECT user_id, display_name FROM user_profiles WHERE NOT is_blocked
		ORDER BY lower(COALESCE(NULLIF(display_name, ''), user_id)), user_id LIMIT $1`, docflow.MentionableMax)
	if err != nil {
		return nil, fmt.Errorf("mentionable: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (docflow.Mentionable, error) {
		var m docflow.Mentionable
		err := r.Scan(&m.UserID, &m.DisplayName)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("mentionable: %w", err)
	}
	if out == nil {
		out = []docflow.Mentionable{}
	}
	return out, nil
}
