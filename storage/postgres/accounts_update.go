package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ownerColumns are the columns that hold a user id as the owner or author
// of something. A local account's e-mail change moves every one of them
// from the old id to the new (docs/decisions.md, "A local user's e-mail
// change"). A table added later that stores a user id belongs here.
var ownerColumns = []struct{ table, column string }{
	{"files", "owner_id"},
	{"shares", "owner_id"},
	{"comments", "user_id"},
	{"annotations", "user_id"},
	{"api_tokens", "owner_id"},
	{"saved_searches", "owner_id"},
	{"pipelines", "owner_id"},
	{"routing_rules", "owner_id"},
	{"classification_rules", "owner_id"},
	{"integrations", "owner_id"},
	{"automation_hooks", "owner_id"},
	{"mobile_devices", "owner_id"},
	{"upload_counters", "owner_id"},
	{"qr_challenges", "user_id"},
}

// UpdateLocalUser applies p; a new e-mail moves what the old id owned.
func (s *AccountStore) UpdateLocalUser(ctx context.Context, id int64, p docflow.LocalUserPatch) (*docflow.LocalUser, error) {
	var u *docflow.LocalUser
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		now := s.now()
		old, err := scanLocalUser(tx.QueryRow(ctx, `SELECT `+localUserCols+` FROM local_users WHERE id=$1 FOR UPDATE`, id))
		if err != nil {
			return notFound(err, "Local user not found")
		}
		u = old
		if p.Email != nil && *p.Email != old.Email {
			if err := s.moveUserTx(ctx, tx, id, old.Email, *p.Email); err != nil {
				return err
			}
			// A link mailed to the old address must not open the account
			// once it is someone else's address.
			if err := spendResetsTx(ctx, tx, id, now); err != nil {
				return err
			}
		}
		u, err = scanLocalUser(tx.QueryRow(ctx, `UPDATE local_users SET
			email = COALESCE($2, email), display_name = COALESCE($3, display_name),
			is_admin = COALESCE($4, is_admin), is_active = COALESCE($5, is_active), updated_at = $6
			WHERE id=$1 RETURNING `+localUserCols, id, p.Email, p.DisplayName, p.IsAdmin, p.IsActive, now))
		if err != nil {
			if c := uniqueViolation(err); c != "" {
				return takenError(c)
			}
			return err
		}
		// Deactivation closes every way in at once. A change of is_admin
		// needs nothing here: sessions and tokens read the rights when
		// used.
		if p.IsActive != nil && !*p.IsActive {
			if err := endAccessTx(ctx, tx, id, u.Email, now); err != nil {
				return err
			}
		}
		if p.DisplayName != nil {
			_, err = tx.Exec(ctx, `UPDATE user_profiles SET display_name=NULLIF($2, ''), updated_at=$3 WHERE user_id=$1`, u.Email, *p.DisplayName, now)
		}
		return err
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return u, nil
}

// moveUserTx gives the account id the user id to instead of from: its
// profile and everything the old id owned, authored or was shared; the
// old id's sessions end (they would act as a user that no longer exists).
func (s *AccountStore) moveUserTx(ctx context.Context, tx pgx.Tx, id int64, from, to string) error {
	var taken bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM local_users WHERE lower(email)=lower($1) AND id<>$2)
		OR EXISTS (SELECT 1 FROM user_profiles WHERE lower(user_id)=lower($1) AND user_id<>$3)
		OR EXISTS (SELECT 1 FROM sso_users WHERE lower(user_id)=lower($1))`, to, id, from).Scan(&taken)
	if err != nil {
		return err
	}
	// A case-only change keeps the same identity; any other id held by
	// someone else (an account, or a profile an SSO user signed in with)
	// would merge two people.
	if taken {
		return docflow.Errorf(docflow.ECONFLICT, "email taken")
	}
	if _, err := tx.Exec(ctx, `UPDATE user_profiles SET user_id=$2 WHERE user_id=$1`, from, to); err != nil {
		return err
	}
	// Shares with the new id: one share per file and person, and none with
	// oneself.
	if _, err := tx.Exec(ctx, `DELETE FROM shares s WHERE s.shared_with_user_id=$1
		AND EXISTS (SELECT 1 FROM shares t WHERE t.file_id=s.file_id AND t.shared_with_user_id=$2)`, from, to); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE shares SET shared_with_user_id=$2 WHERE shared_with_user_id=$1`, from, to); err != nil {
		return err
	}
	for _, oc := range ownerColumns {
		q := `UPDATE ` + oc.table + ` SET ` + oc.column + `=$2 WHERE ` + oc.column + `=$1`
		if _, err := tx.Exec(ctx, q, from, to); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM shares WHERE owner_id=$1 AND shared_with_user_id=$1`, to); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE comments SET mentions=array_replace(mentions, $1, $2) WHERE $1 = ANY(mentions)`, from, to); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `DELETE FROM sessions WHERE user_id=$1`, from)
	return err
}
