package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// AttemptEncoder builds the outbox message that asks the delivery
// consumers for an attempt of a delivery now (the delivery package's
// AttemptMessage): storage writes it without knowing the topics.
type AttemptEncoder func(deliveryID int64, attempt int) (docflow.OutboxMessage, error)

// WebhookStore implements docflow.WebhookStore and the delivery core's
// store on the webhooks, event_deliveries and event_delivery_attempts
// tables. Secrets are encrypted at rest with the settings' cipher.
type WebhookStore struct {
	db      *DB
	cipher  *Cipher
	attempt AttemptEncoder
	now     func() time.Time
	// AdminEvents tells whether an event goes to the admin notification
	// channels too (the subscriber "admin"); nil: none does. Set it
	// before the delivery core starts.
	AdminEvents func(name string) bool
	// HookOwnerAdmin tells whether the owner of an automation hook is an
	// administrator now: a hook that sees all gets every user's events
	// only while it is. nil: no owner is (such hooks get their owner's
	// events only). Set it before the delivery core starts.
	HookOwnerAdmin func(ctx context.Context, userID string) (bool, error)
}

var _ docflow.WebhookStore = (*WebhookStore)(nil)

// NewWebhookStore returns the store; attempt builds redelivery messages.
func NewWebhookStore(db *DB, c *Cipher, attempt AttemptEncoder) *WebhookStore {
	if db == nil || c == nil || attempt == nil {
		panic("postgres: NewWebhookStore needs a DB, a Cipher and an AttemptEncoder")
	}
	return &WebhookStore{db: db, cipher: c, attempt: attempt, now: time.Now}
}

const webhookCols = `id, url, secret, events, is_active, description, created_at, updated_at, failing_since`

func (s *WebhookStore) scanWebhook(row pgx.Row) (*docflow.Webhook, error) {
	var w docflow.Webhook
	var secret string
	if err := row.Scan(&w.ID, &w.URL, &secret, &w.Events, &w.IsActive, &w.Description, &w.CreatedAt, &w.UpdatedAt, &w.FailingSince); err != nil {
		return nil, err
	}
	w.HasSecret = secret != ""
	if w.Events == nil {
		w.Events = []string{}
	}
	w.Failing = w.FailingSince != nil && s.now().Sub(*w.FailingSince) >= docflow.WebhookFailingAfter
	return &w, nil
}

// FindWebhooks lists every webhook, oldest first.
func (s *WebhookStore) FindWebhooks(ctx context.Context) ([]*docflow.Webhook, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks ORDER BY id`)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	out := []*docflow.Webhook{}
	for rows.Next() {
		w, err := s.scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, dbErr(rows.Err())
}

// FindWebhook returns webhook id (ENOTFOUND when there is none).
func (s *WebhookStore) FindWebhook(ctx context.Context, id int64) (*docflow.Webhook, error) {
	w, err := s.scanWebhook(s.db.Pool.QueryRow(ctx, `SELECT `+webhookCols+` FROM webhooks WHERE id = $1`, id))
	if err != nil {
		return nil, notFound(dbErr(err), "Webhook not found")
	}
	return w, nil
}

func (s *WebhookStore) seal(secret string) (string, error) {
	if secret == "" {
		return "", nil
	}
	return s.cipher.Encrypt(secret)
}

// CreateWebhook stores w (validated by the caller) and sets its id and
// times.
func (s *WebhookStore) CreateWebhook(ctx context.Context, w *docflow.Webhook) error {
	sealed, err := s.seal(w.Secret)
	if err != nil {
		return err
	}
	if w.Events == nil {
		w.Events = []string{}
	}
	err = s.db.Pool.QueryRow(ctx, `INSERT INTO webhooks (url, secret, events, is_active, description)
		VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at, updated_at`,
		w.URL, sealed, w.Events, w.IsActive, w.Description).Scan(&w.ID, &w.CreatedAt, &w.UpdatedAt)
	if err != nil {
		return dbErr(err)
	}
	w.HasSecret = w.Secret != ""
	return nil
}

// UpdateWebhook applies p to webhook id.
func (s *WebhookStore) UpdateWebhook(ctx context.Context, id int64, p docflow.WebhookPatch) (*docflow.Webhook, error) {
	var sealed *string
	if p.Secret != nil {
		v, err := s.seal(*p.Secret)
		if err != nil {
			return nil, err
		}
		sealed = &v
	}
	var events []string
	if p.Events != nil {
		events = *p.Events
		if events == nil {
			events = []string{}
		}
	}
	w, err := s.scanWebhook(s.db.Pool.QueryRow(ctx, `UPDATE webhooks SET
			url = COALESCE($2, url), secret = COALESCE($3, secret),
			events = CASE WHEN $4::boolean THEN $5::text[] ELSE events END,
			is_active = COALESCE($6, is_active), description = COALESCE($7, description),
			updated_at = now()
		WHERE id = $1 RETURNING `+webhookCols,
		id, p.URL, sealed, p.Events != nil, events, p.IsActive, p.Description))
	if err != nil {
		return nil, notFound(dbErr(err), "Webhook not found")
	}
	return w, nil
}

// DeleteWebhook removes webhook id. Its deliveries stay in the log; those
// still queued are dropped when their attempt comes.
func (s *WebhookStore) DeleteWebhook(ctx context.Context, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
	if err != nil {
		return dbErr(err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Webhook not found")
	}
	return nil
}

func webhookSubscriber(id int64) string {
	return docflow.Subscriber{Kind: docflow.SubscriberWebhook, ID: id}.String()
}

// Fanout records one delivery of ev per active webhook subscribed to its
// name, per active automation hook subscribed to it that may see it
// (fanoutHooks: a hook that sees all only while HookOwnerAdmin says its
// owner is an administrator) and, for document.processed, per active device of the
// document's owner (each created before the event: a new webhook does not
// receive the history of the topic), plus one to "admin" when AdminEvents
// takes it, and returns the deliveries whose first attempt is still to be
// made and not postponed to later. Recording is idempotent per (event
// id, subscriber): a redelivered event returns only what was not
// attempted yet, nor waits for its postponement.
func (s *WebhookStore) Fanout(ctx context.Context, ev docflow.Event) ([]docflow.EventDelivery, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("fanout %s: %w", ev.ID, err)
	}
	admins, err := s.seeAllOwners(ctx, ev)
	if err != nil {
		return nil, fmt.Errorf("fanout %s: %w", ev.ID, err)
	}
	var out []docflow.EventDelivery
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO event_deliveries (event_id, subscriber, event_name, event)
			SELECT $1, 'webhook:' || id, $2, $3 FROM webhooks
			WHERE is_active AND $2 = ANY(events) AND created_at <= $4
			ON CONFLICT (event_id, subscriber) DO NOTHING`, ev.ID, ev.Name, body, ev.Timestamp); err != nil {
			return err
		}
		if err := fanoutHooks(ctx, tx, ev, body, admins); err != nil {
			return err
		}
		if ev.Name == docflow.EventDocumentProcessed && ev.OwnerID != nil {
			// A processed document is pushed to every active device of its
			// owner registered before the event.
			if _, err := tx.Exec(ctx, `INSERT INTO event_deliveries (event_id, subscriber, event_name, event)
				SELECT $1, 'device:' || id, $2, $3 FROM mobile_devices
				WHERE owner_id = $4 AND is_active AND created_at <= $5
				ON CONFLICT (event_id, subscriber) DO NOTHING`, ev.ID, ev.Name, body, *ev.OwnerID, ev.Timestamp); err != nil {
				return err
			}
		}
		if s.AdminEvents != nil && s.AdminEvents(ev.Name) {
			if _, err := tx.Exec(ctx, `INSERT INTO event_deliveries (event_id, subscriber, event_name, event)
				VALUES ($1, $2, $3, $4) ON CONFLICT (event_id, subscriber) DO NOTHING`,
				ev.ID, docflow.SubscriberAdmin, ev.Name, body); err != nil {
				return err
			}
		}
		// A delivery whose first attempt was postponed is left to the
		// message that brings it back when due: a copy of its event
		// arriving meanwhile makes no early attempt.
		rows, err := tx.Query(ctx, `SELECT id, subscriber FROM event_deliveries
			WHERE event_id = $1 AND status = 'pending' AND attempts = 0 AND (next_attempt IS NULL OR next_attempt <= now())
			ORDER BY id`, ev.ID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var sub string
			if err := rows.Scan(&id, &sub); err != nil {
				return err
			}
			ps, err := docflow.ParseSubscriber(sub)
			if err != nil {
				return err
			}
			out = append(out, docflow.EventDelivery{ID: id, EventID: ev.ID, Event: ev, Subscriber: ps, Status: docflow.DeliveryPending})
		}
		return rows.Err()
	})
	if err != nil {
		return nil, dbErr(err)
	}
	return out, nil
}

// Delivery returns delivery id (ENOTFOUND when it is gone).
func (s *WebhookStore) Delivery(ctx context.Context, id int64) (*docflow.EventDelivery, error) {
	var d docflow.EventDelivery
	var sub string
	var body []byte
	var next *time.Time
	err := s.db.Pool.QueryRow(ctx, `SELECT id, event_id, subscriber, status, attempts, event, next_attempt
		FROM event_deliveries WHERE id = $1`, id).Scan(&d.ID, &d.EventID, &sub, &d.Status, &d.Attempts, &body, &next)
	if err != nil {
		return nil, notFound(dbErr(err), "Delivery not found")
	}
	if next != nil {
		d.NextAttempt = *next
	}
	if d.Subscriber, err = docflow.ParseSubscriber(sub); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &d.Event); err != nil {
		return nil, fmt.Errorf("delivery %d: event: %w", id, err)
	}
	return &d, nil
}

// Target reads where sub's deliveries go now (Found false when it was
// deleted).
func (s *WebhookStore) Target(ctx context.Context, sub docflow.Subscriber) (docflow.DeliveryTarget, error) {
	var t docflow.DeliveryTarget
	switch sub.Kind {
	case docflow.SubscriberAdmin:
		// The admin channels are settings, read by their sender at each
		// attempt: always there.
		return docflow.DeliveryTarget{Found: true, Active: true}, nil
	case docflow.SubscriberDevice:
		return s.deviceTarget(ctx, sub.ID)
	case docflow.SubscriberHook:
		return s.hookTarget(ctx, sub.ID)
	case docflow.SubscriberWebhook:
	default:
		return t, docflow.Errorf(docflow.EINVALID, "no target for subscriber kind %q", sub.Kind)
	}
	var sealed string
	err := s.db.Pool.QueryRow(ctx, `SELECT url, secret, events, is_active FROM webhooks WHERE id = $1`, sub.ID).
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
			return t, fmt.Errorf("webhook %d: secret: %w", sub.ID, err)
		}
	}
	return t, nil
}

// deviceTarget reads device id's push token (Found false when the device
// was deleted).
func (s *WebhookStore) deviceTarget(ctx context.Context, id int64) (docflow.DeliveryTarget, error) {
	var t docflow.DeliveryTarget
	err := s.db.Pool.QueryRow(ctx, `SELECT push_token, is_active FROM mobile_devices WHERE id = $1`, id).
		Scan(&t.PushToken, &t.Active)
	if err == pgx.ErrNoRows {
		return t, nil
	}
	if err != nil {
		return t, dbErr(err)
	}
	t.Found = true
	return t, nil
}

// RecordAttempt records attempt a of a delivery to sub and, in the same
// transaction, retry (the message that brings the next attempt back, nil
// when there is none). An attempt already recorded (a copy of the same
// attempt after a crash) changes nothing: ok is false.
func (s *WebhookStore) RecordAttempt(ctx context.Context, sub docflow.Subscriber, a docflow.DeliveryAttempt, retry *docflow.OutboxMessage) (ok bool, err error) {
	var code *int
	if a.StatusCode != 0 {
		code = &a.StatusCode
	}
	var errText *string
	if a.Error != "" {
		e := clip(a.Error, 2048)
		errText = &e
	}
	ms := a.Duration.Milliseconds()
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE event_deliveries SET attempts = $2, status = $3,
				last_status_code = $4, last_duration_ms = $5, last_error = $6, next_attempt = $7,
				delivered_at = CASE WHEN $3 = 'delivered' THEN $8 ELSE delivered_at END, updated_at = $8
			WHERE id = $1 AND attempts < $2 AND status = 'pending'`,
			a.DeliveryID, a.Attempt, a.Status, code, ms, errText, a.NextAttemptAt, a.At)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		ok = true
		if _, err := tx.Exec(ctx, `INSERT INTO event_delivery_attempts
				(delivery_id, attempt, status_code, duration_ms, error, attempted_at, next_attempt_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			a.DeliveryID, a.Attempt, code, ms, errText, a.At, a.NextAttemptAt); err != nil {
			return err
		}
		if sub.Kind == docflow.SubscriberWebhook {
			q := `UPDATE webhooks SET failing_since = COALESCE(failing_since, $2) WHERE id = $1`
			if a.Status == docflow.DeliveryDelivered {
				q = `UPDATE webhooks SET failing_since = NULL, last_success_at = $2 WHERE id = $1`
			}
			if _, err := tx.Exec(ctx, q, sub.ID, a.At); err != nil {
				return err
			}
		}
		if a.Unsubscribe && sub.Kind == docflow.SubscriberHook {
			if err := unsubscribeHook(ctx, tx, sub.ID); err != nil {
				return err
			}
		}
		if retry != nil {
			return Enqueue(ctx, tx, *retry)
		}
		return nil
	})
	return ok, dbErr(err)
}

// DropDelivery ends a pending delivery whose subscriber is gone or
// inactive, with reason as its error.
func (s *WebhookStore) DropDelivery(ctx context.Context, id int64, reason string) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE event_deliveries SET status = 'dropped', last_error = $2,
		next_attempt = NULL, updated_at = now() WHERE id = $1 AND status = 'pending'`, id, clip(reason, 2048))
	return dbErr(err)
}

// Postpone sets pending delivery id's next attempt to due and writes m
// (which brings it back then) in one transaction.
func (s *WebhookStore) Postpone(ctx context.Context, id int64, due time.Time, m docflow.OutboxMessage) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE event_deliveries SET next_attempt = $2, updated_at = now()
			WHERE id = $1 AND status = 'pending'`, id, due)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return Enqueue(ctx, tx, m)
	})
	return dbErr(err)
}

// ListDeliveries pages webhook webhookID's deliveries, newest first, each
// with its attempts.
func (s *WebhookStore) ListDeliveries(ctx context.Context, webhookID int64, page, perPage int) ([]docflow.DeliveryLogEntry, int, error) {
	if _, err := s.FindWebhook(ctx, webhookID); err != nil {
		return nil, 0, err
	}
	return deliveryLog(ctx, s.db, webhookSubscriber(webhookID), page, perPage)
}

// Redeliver makes delivery deliveryID of webhook webhookID pending again
// and queues its next attempt now, in one transaction.
func (s *WebhookStore) Redeliver(ctx context.Context, webhookID, deliveryID int64) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var attempts int
		err := tx.QueryRow(ctx, `UPDATE event_deliveries SET status = 'pending', next_attempt = now(), updated_at = now()
			WHERE id = $1 AND subscriber = $2 RETURNING attempts`, deliveryID, webhookSubscriber(webhookID)).Scan(&attempts)
		if err != nil {
			return notFound(err, "Delivery %s not found for webhook %s", strconv.FormatInt(deliveryID, 10), strconv.FormatInt(webhookID, 10))
		}
		m, err := s.attempt(deliveryID, attempts+1)
		if err != nil {
			return err
		}
		return Enqueue(ctx, tx, m)
	})
	return dbErr(err)
}
