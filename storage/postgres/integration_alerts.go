package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// IntegrationAlertStore claims the integrations that have been failing
// long enough to tell the admins (integrations.failing_since, kept by the
// trigger of migration 0510) and records the notification for the
// delivery core, so each failure is notified once, by one process, and
// never lost once claimed.
type IntegrationAlertStore struct {
	db      *DB
	attempt AttemptEncoder
}

// NewIntegrationAlertStore returns the store; attempt builds the message
// that asks the delivery core for a delivery's first attempt.
func NewIntegrationAlertStore(db *DB, attempt AttemptEncoder) *IntegrationAlertStore {
	if db == nil || attempt == nil {
		panic("postgres: NewIntegrationAlertStore needs a DB and an AttemptEncoder")
	}
	return &IntegrationAlertStore{db: db, attempt: attempt}
}

// ClaimFailingIntegrations claims up to limit active integrations failing
// for at least after (by the database's clock) whose admins were not told
// yet, oldest failure first, and, in the same transaction, records for
// each an integration.failing delivery to the admin channels (subscriber
// "admin") and the outbox message of its first attempt: a claim commits
// with its notification or not at all. Rows another transaction holds
// are skipped (several processes claim side by side). An integration is
// claimed again only after it recovered (last_error cleared) and failed
// anew.
func (s *IntegrationAlertStore) ClaimFailingIntegrations(ctx context.Context, after time.Duration, limit int) (out []docflow.FailingIntegration, err error) {
	defer mapDBError(&err)
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, `WITH due AS (
				SELECT id FROM integrations
				WHERE failing_since IS NOT NULL AND failure_notified_at IS NULL AND is_active
				  AND failing_since <= now() - $1::interval
				ORDER BY failing_since, id LIMIT $2
				FOR UPDATE SKIP LOCKED)
			UPDATE integrations i SET failure_notified_at = now()
			FROM due WHERE i.id = due.id
			RETURNING i.id, i.owner_id, i.name, i.integration_type, i.direction, COALESCE(i.last_error, ''), i.failing_since`,
			after, limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var f docflow.FailingIntegration
			if err := rows.Scan(&f.ID, &f.OwnerID, &f.Name, &f.IntegrationType, &f.Direction, &f.LastError, &f.FailingSince); err != nil {
				rows.Close()
				return err
			}
			out = append(out, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		now := s.db.Now()
		for _, f := range out {
			if err := s.notifyAdmins(ctx, tx, f, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("claim failing integrations: %w", err)
	}
	return out, nil
}

// notifyAdmins records, in tx, f's integration.failing delivery to the
// admin channels and queues its first attempt.
func (s *IntegrationAlertStore) notifyAdmins(ctx context.Context, tx pgx.Tx, f docflow.FailingIntegration, now time.Time) error {
	ev := docflow.IntegrationFailingEvent(newEventID(), f, now)
	body, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var id int64
	if err := tx.QueryRow(ctx, `INSERT INTO event_deliveries (event_id, subscriber, event_name, event)
		VALUES ($1, $2, $3, $4) RETURNING id`, ev.ID, docflow.SubscriberAdmin, ev.Name, body).Scan(&id); err != nil {
		return err
	}
	m, err := s.attempt(id, 1)
	if err != nil {
		return err
	}
	return Enqueue(ctx, tx, m)
}

// newEventID draws an event id of the shape every event has: "evt_" and
// 24 hex digits.
func newEventID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "evt_" + hex.EncodeToString(b)
}
