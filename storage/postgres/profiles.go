package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// This file is the admin side of ProfileStore: the users list, a
// user's detail and statistics, and the profile changes with the user
// events they emit.

var _ docflow.ProfileStore = (*ProfileStore)(nil)

// ownersCTE lists the distinct owners of documents with a loose index
// scan of files_owner_created: one index probe per owner rather than a
// read of every file, so the users list costs what the number of users
// costs, not that of documents.
const ownersCTE = `owners AS MATERIALIZED (
	SELECT id FROM (
		WITH RECURSIVE o(id) AS (
			(SELECT owner_id FROM files WHERE owner_id IS NOT NULL ORDER BY owner_id LIMIT 1)
			UNION ALL
			SELECT (SELECT f.owner_id FROM files f WHERE f.owner_id > o.id ORDER BY f.owner_id LIMIT 1)
			FROM o WHERE o.id IS NOT NULL)
		SELECT id FROM o WHERE id IS NOT NULL) x)`

// usersCTE is every user the admin views know: the profiles, and the
// owners of documents who have none (their profile columns null, profile
// id 0), filtered by $1 (a lower-case substring of the user id or display
// name; "" for all).
const usersCTE = `WITH ` + ownersCTE + `, users AS (
	SELECT p.id, p.user_id, p.display_name, p.daily_upload_limit, p.notes, p.is_blocked,
	       p.subscription_tier, p.preferred_language, p.created_at, p.updated_at
	FROM user_profiles p
	UNION ALL
	SELECT 0, o.id, NULL, NULL, NULL, FALSE, 'free', NULL, NULL, NULL
	FROM owners o WHERE NOT EXISTS (SELECT 1 FROM user_profiles p WHERE p.user_id = o.id))
	SELECT * FROM users u WHERE $1 = '' OR strpos(lower(u.user_id), $1) > 0 OR strpos(lower(COALESCE(u.display_name, '')), $1) > 0`

const profileCols = `id, user_id, display_name, daily_upload_limit, notes, is_blocked,
	subscription_tier, preferred_language, created_at, updated_at`

// scanProfile reads profileCols; created_at and updated_at may be null
// (an owner without a profile).
func scanProfile(row pgx.Row, p *docflow.UserProfile) error {
	var created, updated *time.Time
	if err := row.Scan(&p.ProfileID, &p.UserID, &p.DisplayName, &p.DailyUploadLimit, &p.Notes, &p.IsBlocked,
		&p.SubscriptionTier, &p.PreferredLanguage, &created, &updated); err != nil {
		return err
	}
	if created != nil {
		p.CreatedAt = *created
	}
	if updated != nil {
		p.UpdatedAt = *updated
	}
	return nil
}

// ListProfiles returns a page of users by user id and the total; their
// document counts and last uploads come from one grouped query over the
// page's users.
func (p *ProfileStore) ListProfiles(ctx context.Context, f docflow.ProfileFilter) ([]docflow.UserProfile, int, error) {
	per := f.PerPage
	if per <= 0 {
		per = docflow.ProfilesPerPageDefault
	}
	page := max(f.Page, 1)
	q := lowerQuery(f.Query)
	var total int
	if err := p.db.Pool.QueryRow(ctx, `SELECT count(*) FROM (`+usersCTE+`) t`, q).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count users: %w", err)
	}
	out := []docflow.UserProfile{}
	if (page-1)*per >= total {
		return out, total, nil
	}
	rows, err := p.db.Pool.Query(ctx, `SELECT `+profileCols+` FROM (`+usersCTE+`) t ORDER BY user_id LIMIT $2 OFFSET $3`,
		q, per, (page-1)*per)
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var u docflow.UserProfile
		if err := scanProfile(rows, &u); err != nil {
			return nil, 0, err
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	if err := p.addDocumentCounts(ctx, out); err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

// addDocumentCounts fills document_count and last_upload of users with
// one grouped query (files_owner_created answers it).
func (p *ProfileStore) addDocumentCounts(ctx context.Context, users []docflow.UserProfile) error {
	if len(users) == 0 {
		return nil
	}
	ids := make([]string, len(users))
	at := make(map[string]int, len(users))
	for i, u := range users {
		ids[i] = u.UserID
		at[u.UserID] = i
	}
	rows, err := p.db.Pool.Query(ctx, `SELECT owner_id, count(*), max(created_at) FROM files
		WHERE owner_id = ANY($1) GROUP BY owner_id`, ids)
	if err != nil {
		return fmt.Errorf("document counts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		var last time.Time
		if err := rows.Scan(&id, &n, &last); err != nil {
			return err
		}
		u := &users[at[id]]
		u.DocumentCount, u.LastUpload = n, &last
	}
	return rows.Err()
}

// ProfileDetail returns userID's profile (or the defaults for an owner of
// documents without one) with its statistics.
func (p *ProfileStore) ProfileDetail(ctx context.Context, userID string) (*docflow.ProfileDetail, error) {
	d := &docflow.ProfileDetail{Statistics: docflow.ProfileStats{ByStatus: map[string]int{}}}
	err := scanProfile(p.db.Pool.QueryRow(ctx, `SELECT `+profileCols+` FROM user_profiles WHERE user_id = $1`, userID), &d.UserProfile)
	switch {
	case err == nil:
		d.HasProfile = true
	case errors.Is(err, pgx.ErrNoRows):
		d.UserProfile = docflow.UserProfile{UserID: userID, SubscriptionTier: docflow.TierFree}
	default:
		return nil, fmt.Errorf("profile: %w", err)
	}
	rows, err := p.db.Pool.Query(ctx, `SELECT status, count(*), COALESCE(sum(file_size), 0), max(created_at)
		FROM files WHERE owner_id = $1 GROUP BY status`, userID)
	if err != nil {
		return nil, fmt.Errorf("profile statistics: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var status string
		var n int
		var bytes int64
		var last time.Time
		if err := rows.Scan(&status, &n, &bytes, &last); err != nil {
			return nil, err
		}
		d.Statistics.ByStatus[status] = n
		d.DocumentCount += n
		// NOTE: duplicates share their original's blob: stored bytes are
		// those of the originals.
		if status != "duplicate" {
			d.Statistics.BytesStored += bytes
		}
		if d.LastUpload == nil || last.After(*d.LastUpload) {
			l := last
			d.LastUpload = &l
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("profile statistics: %w", err)
	}
	if !d.HasProfile && d.DocumentCount == 0 {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "User not found")
	}
	err = p.db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM shares WHERE owner_id = $1),
		(SELECT count(*) FROM shares WHERE shared_with_user_id = $1)`, userID).
		Scan(&d.Statistics.SharesGiven, &d.Statistics.SharesReceived)
	if err != nil {
		return nil, fmt.Errorf("profile shares: %w", err)
	}
	return d, nil
}

// PutProfile creates or updates userID's profile, with its events, in one
// transaction.
func (p *ProfileStore) PutProfile(ctx context.Context, userID string, u docflow.ProfileUpdate) (*docflow.UserProfile, bool, error) {
	var out docflow.UserProfile
	var created bool
	err := pgx.BeginFunc(ctx, p.db.Pool, func(tx pgx.Tx) error {
		now := p.db.Now()
		dn := ""
		if u.DisplayName != nil {
			dn = *u.DisplayName
		}
		var err error
		if created, err = ensureProfileTx(ctx, tx, p.events, userID, dn, "admin", now); err != nil {
			return err
		}
		var oldTier string
		if err := tx.QueryRow(ctx, `SELECT subscription_tier FROM user_profiles WHERE user_id = $1 FOR UPDATE`, userID).Scan(&oldTier); err != nil {
			return err
		}
		err = scanProfile(tx.QueryRow(ctx, `UPDATE user_profiles SET
			display_name       = CASE WHEN $2 THEN $3 ELSE display_name END,
			daily_upload_limit = CASE WHEN $4 THEN $5 ELSE daily_upload_limit END,
			notes              = CASE WHEN $6 THEN $7 ELSE notes END,
			is_blocked         = COALESCE($8, is_blocked),
			subscription_tier  = COALESCE($9, subscription_tier),
			preferred_language = CASE WHEN $10 THEN $11 ELSE preferred_language END,
			updated_at         = $12
			WHERE user_id = $1 RETURNING `+profileCols, userID,
			u.SetDisplayName || u.DisplayName != nil, u.DisplayName,
			u.SetDailyUploadLimit || u.DailyUploadLimit != nil, u.DailyUploadLimit,
			u.SetNotes || u.Notes != nil, u.Notes,
			u.IsBlocked, u.SubscriptionTier,
			u.SetPreferredLanguage || u.PreferredLanguage != nil, u.PreferredLanguage, now), &out)
		if err != nil {
			return err
		}
		if out.SubscriptionTier == oldTier {
			return nil
		}
		msg, err := p.events(docflow.EventUserPlanChanged, &userID,
			map[string]any{"user_id": userID, "old_tier": oldTier, "new_tier": out.SubscriptionTier}, now)
		if err != nil {
			return err
		}
		return Enqueue(ctx, tx, msg)
	})
	if err != nil {
		return nil, false, fmt.Errorf("put profile: %w", err)
	}
	users := []docflow.UserProfile{out}
	if err := p.addDocumentCounts(ctx, users); err != nil {
		return nil, false, err
	}
	return &users[0], created, nil
}

// DeleteProfile removes userID's profile; documents are kept.
func (p *ProfileStore) DeleteProfile(ctx context.Context, userID string) error {
	tag, err := p.db.Pool.Exec(ctx, `DELETE FROM user_profiles WHERE user_id = $1`, userID)
	if err != nil {
		return fmt.Errorf("delete profile: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Profile not found")
	}
	return nil
}

// ReportPaymentIssue writes user.payment_issue to the outbox, under a
// share lock on the profile so a concurrent delete cannot slip between
// the check and the event.
func (p *ProfileStore) ReportPaymentIssue(ctx context.Context, userID, issue string) (*docflow.UserProfile, error) {
	var out docflow.UserProfile
	err := pgx.BeginFunc(ctx, p.db.Pool, func(tx pgx.Tx) error {
		err := scanProfile(tx.QueryRow(ctx, `SELECT `+profileCols+` FROM user_profiles WHERE user_id = $1 FOR SHARE`, userID), &out)
		if errors.Is(err, pgx.ErrNoRows) {
			return docflow.Errorf(docflow.ENOTFOUND, "Profile not found")
		}
		if err != nil {
			return err
		}
		msg, err := p.events(docflow.EventUserPaymentIssue, &userID,
			map[string]any{"user_id": userID, "issue": issue}, p.db.Now())
		if err != nil {
			return err
		}
		return Enqueue(ctx, tx, msg)
	})
	if err != nil {
		return nil, fmt.Errorf("payment issue: %w", err)
	}
	users := []docflow.UserProfile{out}
	if err := p.addDocumentCounts(ctx, users); err != nil {
		return nil, err
	}
	return &users[0], nil
}
