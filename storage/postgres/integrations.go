package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// IntegrationStore owns the integrations table for the API: each owner's
// records (every method is scoped to the owner: another owner's id is not
// found), the quota by subscription tier, and the status the process
// running an integration reports. Credentials are stored as
// AES-256-GCM-sealed JSON under the key of the sensitive settings (Cipher)
// and never leave this store except through IntegrationWithCredentials.
type IntegrationStore struct {
	db     *DB
	cipher *Cipher
}

// NewIntegrationStore returns the store on db, sealing credentials with c.
func NewIntegrationStore(db *DB, c *Cipher) *IntegrationStore {
	if db == nil || c == nil {
		panic("postgres: NewIntegrationStore needs a DB and a Cipher")
	}
	return &IntegrationStore{db: db, cipher: c}
}

const integrationColumns = `id, owner_id, direction, integration_type, name, config, credentials <> '',
	is_active, last_used_at, last_error, COALESCE(state->'status', '{}'), created_at, updated_at`

func scanIntegration(row pgx.Row) (*docflow.Integration, error) {
	var in docflow.Integration
	var config, status []byte
	if err := row.Scan(&in.ID, &in.OwnerID, &in.Direction, &in.IntegrationType, &in.Name, &config, &in.HasCredentials,
		&in.IsActive, &in.LastUsedAt, &in.LastError, &status, &in.CreatedAt, &in.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(config, &in.Config); err != nil {
		return nil, fmt.Errorf("integration %d config: %w", in.ID, err)
	}
	if in.Config == nil {
		in.Config = map[string]any{}
	}
	if len(status) > 0 {
		if err := json.Unmarshal(status, &in.Status); err != nil {
			return nil, fmt.Errorf("integration %d status: %w", in.ID, err)
		}
	}
	if in.Status.State == "" {
		in.Status.State = docflow.IntegrationStateIdle
	}
	return &in, nil
}

func errIntegrationNotFound() error {
	return docflow.Errorf(docflow.ENOTFOUND, "Integration not found")
}

// ListIntegrations returns owner's integrations, oldest first.
func (s *IntegrationStore) ListIntegrations(ctx context.Context, owner string, f docflow.IntegrationFilter) (out []*docflow.Integration, err error) {
	defer mapDBError(&err)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+integrationColumns+` FROM integrations
		WHERE owner_id = $1 AND ($2 = '' OR direction = $2) AND ($3 = '' OR integration_type = $3)
		ORDER BY id`, owner, f.Direction, f.IntegrationType)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []*docflow.Integration{}
	for rows.Next() {
		in, err := scanIntegration(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

// GetIntegration returns one of owner's integrations, without credentials.
func (s *IntegrationStore) GetIntegration(ctx context.Context, owner string, id int64) (_ *docflow.Integration, err error) {
	defer mapDBError(&err)
	in, err := scanIntegration(s.db.Pool.QueryRow(ctx, `SELECT `+integrationColumns+` FROM integrations
		WHERE owner_id = $1 AND id = $2`, owner, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errIntegrationNotFound()
	}
	return in, err
}

// IntegrationWithCredentials returns one of owner's integrations with its
// credentials decrypted, for the code that connects with them (the test
// endpoint). Credentials sealed under another SESSION_SECRET are EINVALID:
// the owner must enter them again.
func (s *IntegrationStore) IntegrationWithCredentials(ctx context.Context, owner string, id int64) (_ *docflow.Integration, err error) {
	defer mapDBError(&err)
	var sealed string
	row := s.db.Pool.QueryRow(ctx, `SELECT credentials, `+integrationColumns+` FROM integrations
		WHERE owner_id = $1 AND id = $2`, owner, id)
	in, err := scanIntegration(integrationScanFirst{row: row, first: &sealed})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errIntegrationNotFound()
	} else if err != nil {
		return nil, err
	}
	if in.Credentials, err = s.open(sealed); err != nil {
		return nil, err
	}
	return in, nil
}

// integrationScanFirst scans one extra leading column before the integration's.
type integrationScanFirst struct {
	row   pgx.Row
	first any
}

func (r integrationScanFirst) Scan(dest ...any) error {
	return r.row.Scan(append([]any{r.first}, dest...)...)
}

// seal encrypts credentials; none (nil or empty) is "".
func (s *IntegrationStore) seal(creds map[string]string) (string, error) {
	if len(creds) == 0 {
		return "", nil
	}
	raw, err := json.Marshal(creds)
	if err != nil {
		return "", err
	}
	return s.cipher.Encrypt(string(raw))
}

func (s *IntegrationStore) open(sealed string) (map[string]string, error) {
	creds := map[string]string{}
	if sealed == "" {
		return creds, nil
	}
	plain, err := s.cipher.Decrypt(sealed)
	if err != nil {
		e := docflow.Errorf(docflow.EINVALID, "the stored credentials cannot be read (sealed under another SESSION_SECRET); enter them again")
		e.Fields = []docflow.FieldError{{Field: "credentials", Message: e.Message}}
		return nil, e
	}
	if err := json.Unmarshal([]byte(plain), &creds); err != nil {
		return nil, fmt.Errorf("integration credentials: %w", err)
	}
	return creds, nil
}

// lockIntegrationOwner serialises the quota decisions of one owner: creates and
// re-activations of the same owner take the lock in turn, so two
// concurrent creates cannot both see room for one more.
func lockIntegrationOwner(ctx context.Context, tx pgx.Tx, owner string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('docflow.integrations:' || $1, 0))`, owner)
	return err
}

// integrationUsageTx reads owner's tier (free without a profile) and counts its
// active integrations per direction.
func integrationUsageTx(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, owner string) (docflow.IntegrationUsage, error) {
	var u docflow.IntegrationUsage
	err := q.QueryRow(ctx, `SELECT
			COALESCE((SELECT subscription_tier FROM user_profiles WHERE user_id = $1), $2),
			count(*) FILTER (WHERE direction = $3),
			count(*) FILTER (WHERE direction = $4)
		FROM integrations WHERE owner_id = $1 AND is_active`,
		owner, docflow.TierFree, docflow.DirectionDestination, docflow.DirectionSource).Scan(&u.Tier, &u.Destinations, &u.Sources)
	if !docflow.ValidTier(u.Tier) {
		u.Tier = docflow.TierFree
	}
	return u, err
}

// IntegrationUsage returns owner's tier and active integrations.
func (s *IntegrationStore) IntegrationUsage(ctx context.Context, owner string) (_ docflow.IntegrationUsage, err error) {
	defer mapDBError(&err)
	return integrationUsageTx(ctx, s.db.Pool, owner)
}

// checkIntegrationQuotaTx refuses one more active integration of direction when the
// owner's tier has no room (EFORBIDDEN, docflow.QuotaDetail). The caller
// holds lockIntegrationOwner.
func checkIntegrationQuotaTx(ctx context.Context, tx pgx.Tx, owner, direction string) error {
	u, err := integrationUsageTx(ctx, tx, owner)
	if err != nil {
		return err
	}
	if !docflow.IntegrationQuotaFor(u.Tier).Allows(direction, u.Used(direction)) {
		return docflow.ErrIntegrationQuota(direction)
	}
	return nil
}

// CreateIntegration inserts in (owner, direction, type, name, config,
// credentials, is_active as given; credentials sealed) and fills its id,
// timestamps, HasCredentials and Status; in.Credentials is cleared. An
// active integration counts against the owner's quota, checked in the
// same transaction under the owner's lock; exempt owners (administrators,
// single-user mode) have none.
func (s *IntegrationStore) CreateIntegration(ctx context.Context, in *docflow.Integration, exempt bool) (err error) {
	defer mapDBError(&err)
	sealed, err := s.seal(in.Credentials)
	if err != nil {
		return err
	}
	config, err := json.Marshal(integrationConfig(in.Config))
	if err != nil {
		return err
	}
	now := s.db.Now()
	var out *docflow.Integration
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := lockIntegrationOwner(ctx, tx, in.OwnerID); err != nil {
			return err
		}
		if in.IsActive && !exempt {
			if err := checkIntegrationQuotaTx(ctx, tx, in.OwnerID, in.Direction); err != nil {
				return err
			}
		}
		var err error
		out, err = scanIntegration(tx.QueryRow(ctx, `INSERT INTO integrations
			(owner_id, direction, integration_type, name, config, credentials, is_active, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING `+integrationColumns,
			in.OwnerID, in.Direction, in.IntegrationType, in.Name, config, sealed, in.IsActive, now))
		return err
	})
	if err != nil {
		return err
	}
	*in = *out
	return nil
}

// UpdateIntegration changes one of owner's integrations: fn gets the
// stored record (Credentials nil) and changes it; a Credentials map it
// sets replaces the stored credentials (an empty one removes them),
// nil keeps them, unless fn moved the endpoint (EINVALID on credentials,
// docflow.CheckEndpointChange). Owner, direction and type do not change
// here. Turning an inactive integration active counts against the quota
// like a create. A change of config, credentials or the active flag
// moves the settings' generation in this transaction, which stops the
// sources started before it (migration 0580).
func (s *IntegrationStore) UpdateIntegration(ctx context.Context, owner string, id int64, exempt bool, fn func(*docflow.Integration) error) (_ *docflow.Integration, err error) {
	defer mapDBError(&err)
	var out *docflow.Integration
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := lockIntegrationOwner(ctx, tx, owner); err != nil {
			return err
		}
		cur, err := scanIntegration(tx.QueryRow(ctx, `SELECT `+integrationColumns+` FROM integrations
			WHERE owner_id = $1 AND id = $2 FOR UPDATE`, owner, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return errIntegrationNotFound()
		} else if err != nil {
			return err
		}
		wasActive := cur.IsActive
		next := *cur
		next.Config = maps.Clone(cur.Config)
		next.Credentials = nil
		if err := fn(&next); err != nil {
			return err
		}
		// Whoever calls, stored credentials stay with their endpoint.
		if t, ok := docflow.LookupIntegrationType(cur.IntegrationType); ok {
			if err := docflow.CheckEndpointChange(t, cur.Config, next.Config, cur.HasCredentials, next.Credentials != nil); err != nil {
				return err
			}
		}
		if next.IsActive && !wasActive && !exempt {
			if err := checkIntegrationQuotaTx(ctx, tx, owner, cur.Direction); err != nil {
				return err
			}
		}
		config, err := json.Marshal(integrationConfig(next.Config))
		if err != nil {
			return err
		}
		replace := next.Credentials != nil
		sealed, err := s.seal(next.Credentials)
		if err != nil {
			return err
		}
		out, err = scanIntegration(tx.QueryRow(ctx, `UPDATE integrations SET name = $3, config = $4, is_active = $5,
				credentials = CASE WHEN $6 THEN $7 ELSE credentials END, updated_at = $8
			WHERE owner_id = $1 AND id = $2 RETURNING `+integrationColumns,
			owner, id, next.Name, config, next.IsActive, replace, sealed, s.db.Now()))
		return err
	})
	return out, err
}

// DeleteIntegration removes one of owner's integrations.
func (s *IntegrationStore) DeleteIntegration(ctx context.Context, owner string, id int64) (err error) {
	defer mapDBError(&err)
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM integrations WHERE owner_id = $1 AND id = $2`, owner, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errIntegrationNotFound()
	}
	return nil
}

// RecordIntegrationStatus is how a process running integration id may
// report on it (the IMAP sources' runner writes the same place,
// integrations.state->'status', through its own store) (any owner: the caller is the integration's runner, not a
// user): state, last poll and last use when given, counters added to the
// stored ones, last_error set (or cleared by "") when given. It does not
// touch updated_at, which tells when the owner last changed the record.
// ENOTFOUND when the integration is gone (deleted while running).
func (s *IntegrationStore) RecordIntegrationStatus(ctx context.Context, id int64, u docflow.IntegrationStatusUpdate) (err error) {
	defer mapDBError(&err)
	var state *string
	if u.State != nil {
		st := strings.TrimSpace(*u.State)
		state = &st
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE integrations SET
			state = jsonb_set(state, '{status}', jsonb_build_object(
				'state', COALESCE($2, state->'status'->>'state', 'idle'),
				'last_poll_at', COALESCE(to_jsonb($3::timestamptz), state->'status'->'last_poll_at', 'null'::jsonb),
				'messages_seen', COALESCE((state->'status'->>'messages_seen')::bigint, 0) + $4,
				'documents_ingested', COALESCE((state->'status'->>'documents_ingested')::bigint, 0) + $5,
				'deliveries_ok', COALESCE((state->'status'->>'deliveries_ok')::bigint, 0) + $6,
				'deliveries_failed', COALESCE((state->'status'->>'deliveries_failed')::bigint, 0) + $7)),
			last_used_at = COALESCE($8, last_used_at),
			last_error = CASE WHEN $9 THEN NULLIF($10, '') ELSE last_error END
		WHERE id = $1`,
		id, state, u.LastPollAt, u.MessagesSeen, u.DocumentsIngested, u.DeliveriesOK, u.DeliveriesFailed,
		u.UsedAt, u.Error != nil, integrationDeref(u.Error))
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errIntegrationNotFound()
	}
	return nil
}

// SetIntegrationError records msg as integration id's last_error ("" clears
// it); shorthand for RecordIntegrationStatus.
func (s *IntegrationStore) SetIntegrationError(ctx context.Context, id int64, msg string) error {
	return s.RecordIntegrationStatus(ctx, id, docflow.IntegrationStatusUpdate{Error: &msg})
}

// MarkIntegrationUsed sets integration id's last_used_at to at.
func (s *IntegrationStore) MarkIntegrationUsed(ctx context.Context, id int64, at time.Time) error {
	return s.RecordIntegrationStatus(ctx, id, docflow.IntegrationStatusUpdate{UsedAt: &at})
}

func integrationConfig(c map[string]any) map[string]any {
	if c == nil {
		return map[string]any{}
	}
	return c
}

func integrationDeref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
