package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// RecordAttempts records a batch of attempts in one transaction, as
// RecordAttempt records one: each delivery's row, its attempt in the
// log, its webhook's failing state and its retry. The deliveries and
// their log rows are written by one statement for the whole batch (arrays
// unnested), so a burst costs a round trip per batch, not per attempt. An
// attempt already recorded (a copy after a crash) changes nothing. The
// batch must not hold two attempts of one delivery.
func (s *WebhookStore) RecordAttempts(ctx context.Context, batch []docflow.RecordedAttempt) error {
	if len(batch) == 0 {
		return nil
	}
	n := len(batch)
	ids := make([]int64, n)
	nums := make([]int32, n)
	statuses := make([]string, n)
	codes := make([]*int32, n)
	ms := make([]int64, n)
	errs := make([]*string, n)
	nexts := make([]*time.Time, n)
	ats := make([]time.Time, n)
	for i, r := range batch {
		a := r.Attempt
		ids[i], nums[i], statuses[i], ms[i], nexts[i], ats[i] = a.DeliveryID, int32(a.Attempt), a.Status, a.Duration.Milliseconds(), a.NextAttemptAt, a.At
		if a.StatusCode != 0 {
			c := int32(a.StatusCode)
			codes[i] = &c
		}
		if a.Error != "" {
			e := clip(a.Error, 2048)
			errs[i] = &e
		}
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `WITH a AS (
				SELECT * FROM unnest($1::bigint[], $2::int[], $3::text[], $4::int[], $5::bigint[], $6::text[],
					$7::timestamptz[], $8::timestamptz[]) AS a(id, attempt, status, code, ms, err, next, at)),
			u AS (UPDATE event_deliveries d SET attempts = a.attempt, status = a.status,
					last_status_code = a.code, last_duration_ms = a.ms, last_error = a.err, next_attempt = a.next,
					delivered_at = CASE WHEN a.status = 'delivered' THEN a.at ELSE d.delivered_at END, updated_at = a.at
				FROM a WHERE d.id = a.id AND d.attempts < a.attempt AND d.status = 'pending'
				RETURNING d.id)
			INSERT INTO event_delivery_attempts
				(delivery_id, attempt, status_code, duration_ms, error, attempted_at, next_attempt_at)
			SELECT a.id, a.attempt, a.code, a.ms, a.err, a.at, a.next FROM a JOIN u ON u.id = a.id
			RETURNING delivery_id`, ids, nums, statuses, codes, ms, errs, nexts, ats)
		if err != nil {
			return err
		}
		done := map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			done[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		// The webhooks' failing state: the latest attempt of the batch to
		// each decides, as one attempt at a time would have.
		type state struct {
			ok bool
			at time.Time
		}
		hooks := map[int64]state{}
		var retries []docflow.OutboxMessage
		for _, r := range batch {
			if !done[r.Attempt.DeliveryID] {
				continue
			}
			switch r.Subscriber.Kind {
			case docflow.SubscriberWebhook:
				if st, seen := hooks[r.Subscriber.ID]; !seen || !r.Attempt.At.Before(st.at) {
					hooks[r.Subscriber.ID] = state{r.Attempt.Status == docflow.DeliveryDelivered, r.Attempt.At}
				}
			case docflow.SubscriberHook:
				if r.Attempt.Unsubscribe {
					if err := unsubscribeHook(ctx, tx, r.Subscriber.ID); err != nil {
						return err
					}
				}
			}
			if r.Retry != nil {
				retries = append(retries, *r.Retry)
			}
		}
		if len(hooks) > 0 {
			// Sorted: concurrent batches lock the webhooks in one order.
			wids := make([]int64, 0, len(hooks))
			for id := range hooks {
				wids = append(wids, id)
			}
			slices.Sort(wids)
			oks := make([]bool, len(wids))
			wats := make([]time.Time, len(wids))
			for i, id := range wids {
				oks[i], wats[i] = hooks[id].ok, hooks[id].at
			}
			if _, err := tx.Exec(ctx, `UPDATE webhooks w SET
					failing_since = CASE WHEN x.ok THEN NULL ELSE COALESCE(w.failing_since, x.at) END,
					last_success_at = CASE WHEN x.ok THEN x.at ELSE w.last_success_at END
				FROM unnest($1::bigint[], $2::bool[], $3::timestamptz[]) AS x(id, ok, at) WHERE w.id = x.id`,
				wids, oks, wats); err != nil {
				return err
			}
		}
		return Enqueue(ctx, tx, retries...)
	})
	return dbErr(err)
}

// PostponeAll postpones a batch of pending deliveries as Postpone does
// one: each one's next attempt set to its due time and its message
// written, in one transaction (one statement for the deliveries, one for
// the messages). A delivery no longer pending is left alone, and so is
// its message.
func (s *WebhookStore) PostponeAll(ctx context.Context, ids []int64, dues []time.Time, msgs []docflow.OutboxMessage) error {
	if len(ids) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE event_deliveries d SET next_attempt = x.due, updated_at = now()
			FROM unnest($1::bigint[], $2::timestamptz[]) AS x(id, due)
			WHERE d.id = x.id AND d.status = 'pending' RETURNING d.id`, ids, dues)
		if err != nil {
			return err
		}
		pending := map[int64]bool{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			pending[id] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		out := make([]docflow.OutboxMessage, 0, len(pending))
		for i, id := range ids {
			if pending[id] {
				out = append(out, msgs[i])
			}
		}
		return Enqueue(ctx, tx, out...)
	})
	return dbErr(err)
}
