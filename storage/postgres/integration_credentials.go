package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// RotateIntegrationCredential replaces credential key of integration id
// with next, but only while it still holds prev: a provider that issues a
// new refresh token at each refresh (Microsoft's identity platform) has it
// kept, so the integration still signs in after a restart, and a value the
// owner entered meanwhile is never overwritten. It does not touch
// updated_at, which tells when the owner last changed the record. It
// reports whether it replaced the value; ENOTFOUND when the integration is
// gone.
func (s *IntegrationStore) RotateIntegrationCredential(ctx context.Context, id int64, key, prev, next string) (replaced bool, err error) {
	defer mapDBError(&err)
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var sealed string
		err := tx.QueryRow(ctx, `SELECT credentials FROM integrations WHERE id = $1 FOR UPDATE`, id).Scan(&sealed)
		if errors.Is(err, pgx.ErrNoRows) {
			return errIntegrationNotFound()
		} else if err != nil {
			return err
		}
		creds, err := s.open(sealed)
		if err != nil {
			return err
		}
		if creds[key] != prev || prev == next {
			return nil
		}
		creds[key] = next
		if sealed, err = s.seal(creds); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE integrations SET credentials = $2 WHERE id = $1`, id, sealed); err != nil {
			return err
		}
		replaced = true
		return nil
	})
	return replaced, err
}
