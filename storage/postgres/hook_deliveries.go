package postgres

import (
	"context"

	"docflow"
)

// ListHookDeliveries pages hook id's delivery log, newest first, each
// delivery with its attempts, when v may see the hook (ENOTFOUND
// otherwise). Deliveries dropped while the hook was paused are in it,
// with the reason as their error.
func (s *AutomationHookStore) ListHookDeliveries(ctx context.Context, v docflow.HookViewer, id int64, page, perPage int) ([]docflow.DeliveryLogEntry, int, error) {
	if _, err := s.FindHook(ctx, v, id); err != nil {
		return nil, 0, err
	}
	return deliveryLog(ctx, s.db, docflow.Subscriber{Kind: docflow.SubscriberHook, ID: id}.String(), page, perPage)
}

// deliveryLog pages subscriber sub's deliveries, newest first, each with
// its attempts (the webhooks' and the hooks' delivery logs).
func deliveryLog(ctx context.Context, db *DB, sub string, page, perPage int) ([]docflow.DeliveryLogEntry, int, error) {
	var total int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM event_deliveries WHERE subscriber = $1`, sub).Scan(&total); err != nil {
		return nil, 0, dbErr(err)
	}
	rows, err := db.Pool.Query(ctx, `SELECT id, event_id, event_name, status, attempts, last_status_code,
			last_duration_ms, last_error, delivered_at, next_attempt, created_at
		FROM event_deliveries WHERE subscriber = $1 ORDER BY id DESC LIMIT $2 OFFSET $3`,
		sub, perPage, (page-1)*perPage)
	if err != nil {
		return nil, 0, dbErr(err)
	}
	out := []docflow.DeliveryLogEntry{}
	byID := map[int64]int{}
	ids := []int64{}
	for rows.Next() {
		var e docflow.DeliveryLogEntry
		if err := rows.Scan(&e.ID, &e.EventID, &e.Event, &e.Status, &e.Attempt, &e.StatusCode,
			&e.DurationMS, &e.Error, &e.DeliveredAt, &e.NextAttemptAt, &e.CreatedAt); err != nil {
			rows.Close()
			return nil, 0, dbErr(err)
		}
		e.Attempts = []docflow.DeliveryAttemptEntry{}
		byID[e.ID] = len(out)
		ids = append(ids, e.ID)
		out = append(out, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, dbErr(err)
	}
	if len(ids) == 0 {
		return out, total, nil
	}
	arows, err := db.Pool.Query(ctx, `SELECT delivery_id, attempt, status_code, duration_ms, error, attempted_at, next_attempt_at
		FROM event_delivery_attempts WHERE delivery_id = ANY($1) ORDER BY delivery_id, attempt, id`, ids)
	if err != nil {
		return nil, 0, dbErr(err)
	}
	defer arows.Close()
	for arows.Next() {
		var id int64
		var a docflow.DeliveryAttemptEntry
		if err := arows.Scan(&id, &a.Attempt, &a.StatusCode, &a.DurationMS, &a.Error, &a.AttemptedAt, &a.NextAttemptAt); err != nil {
			return nil, 0, dbErr(err)
		}
		i := byID[id]
		out[i].Attempts = append(out[i].Attempts, a)
	}
	return out, total, dbErr(arows.Err())
}
