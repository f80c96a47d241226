package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// AutomationHookStore implements docflow.AutomationHookStore on the
// automation_hooks table. Secrets are encrypted at rest with the settings'
// cipher. The delivery core reaches hooks through WebhookStore (Fanout,
// Target, RecordAttempt), which reads the same table.
type AutomationHookStore struct {
	db     *DB
	cipher *Cipher
}

var _ docflow.AutomationHookStore = (*AutomationHookStore)(nil)

// NewAutomationHookStore returns the store.
func NewAutomationHookStore(db *DB, c *Cipher) *AutomationHookStore {
	if db == nil || c == nil {
		panic("postgres: NewAutomationHookStore needs a DB and a Cipher")
	}
	return &AutomationHookStore{db: db, cipher: c}
}

const hookCols = `id, owner_id, target_url, secret, events, is_active, hook_type, description, sees_all, created_at, updated_at`

func scanHook(row pgx.Row) (*docflow.AutomationHook, error) {
	var h docflow.AutomationHook
	var secret string
	if err := row.Scan(&h.ID, &h.OwnerID, &h.TargetURL, &secret, &h.Events, &h.IsActive, &h.HookType,
		&h.Description, &h.SeesAll, &h.CreatedAt, &h.UpdatedAt); err != nil {
		return nil, err
	}
	h.HasSecret = secret != ""
	if h.Events == nil {
		h.Events = []string{}
	}
	return &h, nil
}

// CreateHook stores h (validated by the caller) and sets its id and times.
func (s *AutomationHookStore) CreateHook(ctx context.Context, h *docflow.AutomationHook) error {
	sealed := ""
	if h.Secret != "" {
		var err error
		if sealed, err = s.cipher.Encrypt(h.Secret); err != nil {
			return err
		}
	}
	if h.Events == nil {
		h.Events = []string{}
	}
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO automation_hooks
			(owner_id, target_url, secret, events, is_active, hook_type, description, sees_all)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, created_at, updated_at`,
		h.OwnerID, h.TargetURL, sealed, h.Events, h.IsActive, h.HookType, h.Description, h.SeesAll).
		Scan(&h.ID, &h.CreatedAt, &h.UpdatedAt)
	if err != nil {
		return dbErr(err)
	}
	h.HasSecret = h.Secret != ""
	return nil
}

// FindHooks lists ownerID's hooks, oldest first.
func (s *AutomationHookStore) FindHooks(ctx context.Context, ownerID string) ([]*docflow.AutomationHook, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+hookCols+` FROM automation_hooks WHERE owner_id = $1 ORDER BY id`, ownerID)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	out := []*docflow.AutomationHook{}
	for rows.Next() {
		h, err := scanHook(rows)
		if err != nil {
			return nil, dbErr(err)
		}
		out = append(out, h)
	}
	return out, dbErr(rows.Err())
}

// DeleteHook removes ownerID's hook id (ENOTFOUND when it is not
// theirs). Deliveries still queued are dropped when their attempt comes.
func (s *AutomationHookStore) DeleteHook(ctx context.Context, ownerID string, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM automation_hooks WHERE id = $1 AND owner_id = $2`, id, ownerID)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Hook not found")
	}
	return nil
}

// fanoutHooks records, in tx, one delivery of ev per active hook
// subscribed to its name, created before it, that may see it: its owner's
// events (ev.OwnerID), or every event for a hook that sees all while its
// owner is an administrator now (admins: the owners of such hooks that
// are, from seeAllOwners).
func fanoutHooks(ctx context.Context, tx pgx.Tx, ev docflow.Event, body []byte, admins []string) error {
	if admins == nil {
		admins = []string{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO event_deliveries (event_id, subscriber, event_name, event)
		SELECT $1, 'hook:' || id, $2, $3 FROM automation_hooks
		WHERE is_active AND $2 = ANY(events) AND created_at <= $4
			AND (owner_id = $5 OR (sees_all AND owner_id = ANY($6)))
		ON CONFLICT (event_id, subscriber) DO NOTHING`, ev.ID, ev.Name, body, ev.Timestamp, ev.OwnerID, admins)
	return err
}

// seeAllOwners returns the owners, other than ev's, of the active hooks
// that would see ev because they see all, and that are administrators now
// as isAdmin says (nil: none is). SQL cannot ask who is an administrator
// (the local admin account is a setting, SSO rights may come from the
// provider), so the fan-out asks before its transaction.
func (s *WebhookStore) seeAllOwners(ctx context.Context, ev docflow.Event) ([]string, error) {
	if s.HookOwnerAdmin == nil {
		return nil, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT owner_id FROM automation_hooks
		WHERE is_active AND sees_all AND $1 = ANY(events) AND created_at <= $2 AND owner_id IS DISTINCT FROM $3`,
		ev.Name, ev.Timestamp, ev.OwnerID)
	if err != nil {
		return nil, dbErr(err)
	}
	owners, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, dbErr(err)
	}
	var admins []string
	for _, o := range owners {
		ok, err := s.HookOwnerAdmin(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("is hook owner %q an administrator: %w", o, err)
		}
		if ok {
			admins = append(admins, o)
		}
	}
	return admins, nil
}

// hookTarget reads where hook id's deliveries go now.
func (s *WebhookStore) hookTarget(ctx context.Context, id int64) (docflow.DeliveryTarget, error) {
	var t docflow.DeliveryTarget
	var sealed string
	err := s.db.Pool.QueryRow(ctx, `SELECT target_url, secret, events, is_active FROM automation_hooks WHERE id = $1`, id).
		Scan(&t.URL, &sealed, &t.Events, &t.Active)
	if err == pgx.ErrNoRows {
		return t, nil
	}
	if err != nil {
		return t, dbErr(err)
	}
	t.Found = true
	if sealed != "" {
		if t.Secret, err = s.cipher.Decrypt(sealed); err != nil {
			return t, fmt.Errorf("hook %d: secret: %w", id, err)
		}
	}
	return t, nil
}

// unsubscribeHook deletes hook id in tx (its receiver answered 410 Gone).
func unsubscribeHook(ctx context.Context, tx pgx.Tx, id int64) error {
	_, err := tx.Exec(ctx, `DELETE FROM automation_hooks WHERE id = $1`, id)
	return err
}
