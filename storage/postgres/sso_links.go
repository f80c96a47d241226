package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// The administrators' side of single sign-on: links of local accounts to
// SSO identities, and releasing an identity bound to a user id.

const ssoLinkCols = `l.local_user_id, u.email, l.issuer, l.subject, l.linked_by, l.linked_at, l.bound_at`

func scanSSOLink(row pgx.Row) (*docflow.SSOLink, error) {
	var l docflow.SSOLink
	if err := row.Scan(&l.LocalUserID, &l.Email, &l.Issuer, &l.Subject, &l.LinkedBy, &l.LinkedAt, &l.BoundAt); err != nil {
		return nil, err
	}
	return &l, nil
}

// FindSSOLink returns the SSO link of local account localUserID
// (ENOTFOUND when it has none).
func (s *SSOStore) FindSSOLink(ctx context.Context, localUserID int64) (*docflow.SSOLink, error) {
	l, err := scanSSOLink(s.db.Pool.QueryRow(ctx, `SELECT `+ssoLinkCols+`
		FROM sso_links l JOIN local_users u ON u.id = l.local_user_id WHERE l.local_user_id = $1`, localUserID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "This account is not linked to single sign-on")
	}
	if err != nil {
		return nil, fmt.Errorf("find sso link: %w", dbErr(err))
	}
	return l, nil
}

// LinkSSO lets the SSO identity (l.Issuer, l.Subject) sign in as local
// account l.LocalUserID, replacing the account's previous link; an empty
// Subject lets the next sign-in from l.Issuer with the account's verified
// address bind it. ENOTFOUND for an unknown account, ECONFLICT when the
// identity is linked to another account.
func (s *SSOStore) LinkSSO(ctx context.Context, l docflow.SSOLink) (*docflow.SSOLink, error) {
	if l.Issuer == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "issuer is required")
	}
	if l.LinkedAt.IsZero() {
		l.LinkedAt = s.db.Now()
	}
	var out *docflow.SSOLink
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ssoBindLock); err != nil {
			return err
		}
		if l.Subject != "" {
			var other bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sso_links WHERE issuer = $1 AND subject = $2 AND local_user_id <> $3)`,
				l.Issuer, l.Subject, l.LocalUserID).Scan(&other); err != nil {
				return err
			}
			if other {
				return docflow.Errorf(docflow.ECONFLICT, "This SSO identity is linked to another account")
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO sso_links (local_user_id, issuer, subject, linked_by, linked_at, bound_at)
			VALUES ($1, $2, $3, $4, $5, NULL)
			ON CONFLICT (local_user_id) DO UPDATE SET issuer = EXCLUDED.issuer, subject = EXCLUDED.subject,
				linked_by = EXCLUDED.linked_by, linked_at = EXCLUDED.linked_at, bound_at = NULL`,
			l.LocalUserID, l.Issuer, l.Subject, l.LinkedBy, l.LinkedAt)
		if err != nil {
			return err
		}
		out, err = scanSSOLink(tx.QueryRow(ctx, `SELECT `+ssoLinkCols+`
			FROM sso_links l JOIN local_users u ON u.id = l.local_user_id WHERE l.local_user_id = $1`, l.LocalUserID))
		return err
	})
	if err != nil {
		if uniqueViolation(err) != "" {
			return nil, docflow.Errorf(docflow.ECONFLICT, "This SSO identity is linked to another account")
		}
		err = dbErr(err)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			return nil, docflow.Errorf(docflow.ENOTFOUND, "Local user not found")
		}
		return nil, fmt.Errorf("link sso: %w", err)
	}
	return out, nil
}

// UnlinkSSO removes the SSO link of local account localUserID: the SSO
// identity kept under its e-mail is forgotten (with the admin status the
// provider gave it) and the account's sessions end, so that no SSO
// sign-in of it goes on. ENOTFOUND when it had no link.
func (s *SSOStore) UnlinkSSO(ctx context.Context, localUserID int64) (*docflow.SSOLink, error) {
	var out *docflow.SSOLink
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		l, err := scanSSOLink(tx.QueryRow(ctx, `SELECT `+ssoLinkCols+`
			FROM sso_links l JOIN local_users u ON u.id = l.local_user_id WHERE l.local_user_id = $1 FOR UPDATE OF l`, localUserID))
		if errors.Is(err, pgx.ErrNoRows) {
			return docflow.Errorf(docflow.ENOTFOUND, "This account is not linked to single sign-on")
		}
		if err != nil {
			return err
		}
		out = l
		if _, err := tx.Exec(ctx, `DELETE FROM sso_links WHERE local_user_id = $1`, localUserID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sso_users WHERE lower(user_id) = lower($1)`, l.Email); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, l.Email)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("unlink sso: %w", dbErr(err))
	}
	return out, nil
}

// ForgetSSOUser releases the SSO identity bound to userID and returns it:
// the next sign-in with that verified address binds its own subject (a
// user recreated at the provider, or a new provider). The user's sessions
// end; its documents stay. ENOTFOUND when userID has no SSO identity.
func (s *SSOStore) ForgetSSOUser(ctx context.Context, userID string) (*docflow.SSOUser, error) {
	var out *docflow.SSOUser
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		u, _, err := scanSSOUser(tx.QueryRow(ctx, `DELETE FROM sso_users WHERE user_id = $1 RETURNING `+ssoUserCols, userID))
		if errors.Is(err, pgx.ErrNoRows) {
			return docflow.Errorf(docflow.ENOTFOUND, "Not an SSO user")
		}
		if err != nil {
			return err
		}
		out = u
		_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, userID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("forget sso user: %w", dbErr(err))
	}
	return out, nil
}

// UnlinkedLocalSSOUsers lists (up to limit) the local accounts whose
// address an SSO identity signed in as before identities were bound, and
// that no administrator linked since: their SSO sign-ins are refused.
func (s *SSOStore) UnlinkedLocalSSOUsers(ctx context.Context, limit int) ([]string, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT l.email FROM sso_users s JOIN local_users l ON lower(l.email) = lower(s.user_id)
		WHERE NOT EXISTS (SELECT 1 FROM sso_links k WHERE k.local_user_id = l.id) ORDER BY l.email LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("unlinked local sso users: %w", dbErr(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("unlinked local sso users: %w", dbErr(err))
	}
	return out, nil
}
