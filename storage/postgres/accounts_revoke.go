package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// endAccessTx closes, in tx, every way into the local account id (user
// id email) that does not need its password now: its outstanding reset
// links are spent, its active API tokens revoked and its sessions
// deleted. Deactivation, a password reset and an administrator's
// set-password call it in the transaction of their change, so no request
// after the commit gets in with what the account had before.
func endAccessTx(ctx context.Context, tx pgx.Tx, id int64, email string, now time.Time) error {
	if err := spendResetsTx(ctx, tx, id, now); err != nil {
		return err
	}
	if err := revokeOwnerTokensTx(ctx, tx, email, now); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM sessions WHERE user_id = $1`, email)
	return err
}

// spendResetsTx marks the account's unused reset links used.
func spendResetsTx(ctx context.Context, tx pgx.Tx, id int64, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE password_resets SET used_at = $2 WHERE local_user_id = $1 AND used_at IS NULL`, id, now)
	return err
}

// revokeOwnerTokensTx revokes owner's active API tokens as DELETE
// /api/api-tokens/{id} does: kept, marked revoked at now, so the owner
// and the administrators still list them and may reactivate one.
func revokeOwnerTokensTx(ctx context.Context, tx pgx.Tx, owner string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE api_tokens SET is_active = FALSE, revoked_at = $2, last_revoked_at = $2
		WHERE owner_id = $1 AND is_active`, owner, now)
	return err
}
