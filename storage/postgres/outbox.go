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

// This file owns the transactional outbox table: every row is written here
// (alone, or as part of a larger statement through outboxInsert), locked,
// marked sent and deleted here. The messages themselves are built by the
// streams package; the relay (streams.Relay) publishes them through Outbox.

// OutboxChannel is the NOTIFY channel of the outbox insert trigger
// (migrations 0001 and 0201).
const OutboxChannel = "docflow_outbox"

// Enqueue writes msgs as outbox rows inside the caller's transaction: they
// are published if and only if tx commits, in order per (topic, key). The
// insert trigger wakes the relays at commit.
func Enqueue(ctx context.Context, tx pgx.Tx, msgs ...docflow.OutboxMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	a, err := outboxArrays(msgs)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	// One statement for the whole batch: one round trip, one NOTIFY.
	if _, err := tx.Exec(ctx, outboxInsert{at: 1}.sql(), a.args()...); err != nil {
		return fmt.Errorf("enqueue %d outbox messages: %w", len(msgs), err)
	}
	return nil
}

// enqueueQuiet writes msgs in tx for write-through: the rows wake no relay
// (docflow.outbox_quiet, migration 0201) and become due only after grace,
// so that the relay publishes them only when the writer could not. It
// returns their ids, in order.
func enqueueQuiet(ctx context.Context, tx pgx.Tx, msgs []docflow.OutboxMessage, grace time.Duration) ([]int64, error) {
	a, err := outboxArrays(msgs)
	if err != nil {
		return nil, err
	}
	var ids []int64
	err = tx.QueryRow(ctx, `
		WITH q AS (SELECT set_config('docflow.outbox_quiet', 'on', true)),
		o AS (`+outboxInsert{at: 1, grace: 6, from: "q", returning: true}.sql()+`)
		SELECT COALESCE(array_agg(id ORDER BY id), '{}') FROM o`,
		append(a.args(), grace.Milliseconds())...).Scan(&ids)
	if err != nil {
		return nil, fmt.Errorf("enqueue %d outbox messages: %w", len(msgs), err)
	}
	return ids, nil
}

// outboxInsert is the one statement that writes outbox rows, alone or as a
// data-modifying CTE of a larger statement (one round trip for a change and
// its messages). The rows come from the five arrays of outboxCols.args at
// parameters $at to $at+4 and are written in array order.
type outboxInsert struct {
	at int
	// grace, when not 0, is the parameter holding the milliseconds after
	// which rows without an available_at become due (write-through).
	grace int
	// item, when not 0, is the parameter of an int[] beside the arrays
	// giving each row the ordinal of the item it belongs to (m.item), for
	// where to filter on.
	item int
	// from names more FROM items; where filters the rows.
	from, where string
	returning   bool
}

func (o outboxInsert) sql() string {
	p := func(n int, typ string) string { return "$" + strconv.Itoa(n) + "::" + typ + "[]" }
	arrays := p(o.at, "text") + ", " + p(o.at+1, "text") + ", " + p(o.at+2, "bytea") + ", " + p(o.at+3, "text") + ", " + p(o.at+4, "timestamptz")
	alias := "m(t, k, p, h, a, n)"
	if o.item > 0 {
		arrays = p(o.item, "int") + ", " + arrays
		alias = "m(item, t, k, p, h, a, n)"
	}
	due := "now()"
	if o.grace > 0 {
		due = "now() + $" + strconv.Itoa(o.grace) + " * interval '1 millisecond'"
	}
	s := `INSERT INTO outbox (topic, key, payload, headers, available_at)
			SELECT m.t, m.k, m.p, m.h::jsonb, COALESCE(m.a, ` + due + `)
			FROM unnest(` + arrays + `) WITH ORDINALITY AS ` + alias
	if o.from != "" {
		s += ", " + o.from
	}
	if o.where != "" {
		s += `
			WHERE ` + o.where
	}
	s += `
			ORDER BY m.n`
	if o.returning {
		s += `
			RETURNING id`
	}
	return s
}

// outboxCols are outbox messages as the column arrays of outboxInsert.
type outboxCols struct {
	topics, keys, headers []string
	payloads              [][]byte
	avail                 []*time.Time
}

// args are the arrays in outboxInsert's parameter order.
func (a outboxCols) args() []any {
	return []any{a.topics, a.keys, a.payloads, a.headers, a.avail}
}

func outboxArrays(msgs []docflow.OutboxMessage) (outboxCols, error) {
	a := outboxCols{topics: make([]string, len(msgs)), keys: make([]string, len(msgs)), headers: make([]string, len(msgs)),
		payloads: make([][]byte, len(msgs)), avail: make([]*time.Time, len(msgs))}
	for i, m := range msgs {
		if m.Topic == "" {
			return a, fmt.Errorf("outbox message %d: empty topic", i)
		}
		a.topics[i], a.keys[i], a.payloads[i] = m.Topic, m.Key, m.Payload
		if a.payloads[i] == nil {
			a.payloads[i] = []byte{}
		}
		h := m.Headers
		if h == nil {
			h = map[string]string{}
		}
		b, err := json.Marshal(h)
		if err != nil {
			return a, fmt.Errorf("outbox message %d: headers: %w", i, err)
		}
		a.headers[i] = string(b)
		if !m.AvailableAt.IsZero() {
			t := m.AvailableAt
			a.avail[i] = &t
		}
	}
	return a, nil
}

// Outbox is the relay's view of the outbox table (streams.OutboxStore)
// and the write-through's (streams.SentMarker).
type Outbox struct {
	db *DB
}

// NewOutbox returns the outbox of db.
func NewOutbox(db *DB) *Outbox {
	if db == nil {
		panic("postgres: NewOutbox needs a DB")
	}
	return &Outbox{db: db}
}

// Enqueue writes msgs in a transaction of their own.
func (o *Outbox) Enqueue(ctx context.Context, msgs ...docflow.OutboxMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, o.db.Pool, func(tx pgx.Tx) error { return Enqueue(ctx, tx, msgs...) })
}

// RelayDue locks up to limit due, unsent rows (FOR UPDATE SKIP LOCKED, so
// several relays work side by side) in id order, except the ids in skip;
// holds back the rows behind an earlier due, unsent row of their (topic,
// key) outside the batch; hands the rest to publish while they stay locked,
// and marks the ids publish returns sent in the same transaction. An error
// from publish rolls everything back. It returns how many rows it locked
// and how many of them it held back.
func (o *Outbox) RelayDue(ctx context.Context, limit int, skip []int64,
	publish func([]docflow.OutboxRow) ([]int64, error)) (locked, heldBack int, err error) {
	if skip == nil {
		skip = []int64{} // NULL would match no row
	}
	tx, err := o.db.Pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after commit

	rows, err := tx.Query(ctx, `
		SELECT id, topic, key, payload, headers FROM outbox
		WHERE sent_at IS NULL AND available_at <= now() AND id <> ALL($2)
		ORDER BY id LIMIT $1
		FOR UPDATE SKIP LOCKED`, limit, skip)
	if err != nil {
		return 0, 0, fmt.Errorf("select due rows: %w", err)
	}
	var batch []docflow.OutboxRow
	for rows.Next() {
		var r docflow.OutboxRow
		if err := rows.Scan(&r.ID, &r.Topic, &r.Key, &r.Payload, &r.Headers); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("scan due row: %w", err)
		}
		batch = append(batch, r)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("select due rows: %w", err)
	}
	locked = len(batch)
	if locked == 0 {
		return 0, 0, nil
	}
	if batch, err = holdBackBlocked(ctx, tx, batch); err != nil {
		return 0, 0, err
	}
	heldBack = locked - len(batch)
	if len(batch) == 0 {
		return locked, heldBack, nil // the rollback unlocks them
	}
	sent, err := publish(batch)
	if err != nil {
		return 0, 0, fmt.Errorf("publish: %w", err)
	}
	if len(sent) == 0 {
		return locked, heldBack, nil // all failed; the rollback unlocks them
	}
	if _, err := tx.Exec(ctx, `UPDATE outbox SET sent_at = now() WHERE id = ANY($1)`, sent); err != nil {
		return 0, 0, fmt.Errorf("mark sent: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("commit: %w", err)
	}
	return locked, heldBack, nil
}

// holdBackBlocked drops from batch (sorted by id) every row that has an
// earlier due, unsent row of the same (topic, key) outside the batch: that
// row is locked by another relay, and publishing ours first would reorder
// the key. The dropped rows stay unsent and are picked up again.
func holdBackBlocked(ctx context.Context, tx pgx.Tx, batch []docflow.OutboxRow) ([]docflow.OutboxRow, error) {
	ids := make([]int64, len(batch))
	topics := make([]string, 0, len(batch))
	keys := make([]string, 0, len(batch))
	seen := map[[2]string]bool{}
	for i, o := range batch {
		ids[i] = o.ID
		pk := [2]string{o.Topic, o.Key}
		if !seen[pk] {
			seen[pk] = true
			topics = append(topics, o.Topic)
			keys = append(keys, o.Key)
		}
	}
	rows, err := tx.Query(ctx, `
		SELECT o.topic, o.key, min(o.id) FROM outbox o
		JOIN unnest($1::text[], $2::text[]) AS p(topic, key) ON p.topic = o.topic AND p.key = o.key
		WHERE o.sent_at IS NULL AND o.available_at <= now() AND o.id < $3 AND o.id <> ALL($4)
		GROUP BY o.topic, o.key`, topics, keys, ids[len(ids)-1], ids)
	if err != nil {
		return nil, fmt.Errorf("check key order: %w", err)
	}
	blockers := map[[2]string]int64{}
	for rows.Next() {
		var t, k string
		var id int64
		if err := rows.Scan(&t, &k, &id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("check key order: %w", err)
		}
		blockers[[2]string{t, k}] = id
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("check key order: %w", err)
	}
	if len(blockers) == 0 {
		return batch, nil
	}
	kept := batch[:0]
	for _, o := range batch {
		if b, ok := blockers[[2]string{o.Topic, o.Key}]; ok && o.ID > b {
			continue
		}
		kept = append(kept, o)
	}
	return kept, nil
}

// MarkSent marks rows published outside RelayDue (write-through). It
// commits asynchronously: a lost mark only makes the relay publish the rows
// again.
func (o *Outbox) MarkSent(ctx context.Context, ids []int64) error {
	return markSent(ctx, o.db, ids)
}

// markSentSQL marks the unsent rows of the ids $1 sent, committing
// asynchronously.
//
// NOTE: num_nulls(sent_at) = 1 is sent_at IS NULL in a form that does not
// imply outbox_unsent's predicate: written plainly, statistics taken while
// few rows were unsent let the planner scan that whole index for each call
// instead of looking the ids up (see claimsSQL).
const markSentSQL = `WITH c AS (SELECT set_config('synchronous_commit', 'off', true))
		UPDATE outbox SET sent_at = now() FROM c WHERE id = ANY($1) AND num_nulls(sent_at) = 1`

func markSent(ctx context.Context, db *DB, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := db.Pool.Exec(ctx, markSentSQL, ids)
	if err != nil {
		return fmt.Errorf("mark outbox rows sent: %w", err)
	}
	return nil
}

// NextDue is the wait until the earliest delayed unsent row becomes due;
// false when there is none.
func (o *Outbox) NextDue(ctx context.Context) (time.Duration, bool, error) {
	var wait *float64
	err := o.db.Pool.QueryRow(ctx, `
		SELECT EXTRACT(EPOCH FROM min(available_at) - now())
		FROM outbox WHERE sent_at IS NULL AND available_at > now()`).Scan(&wait)
	if err != nil {
		return 0, false, fmt.Errorf("next due outbox row: %w", err)
	}
	if wait == nil {
		return 0, false, nil
	}
	return max(time.Duration(*wait*float64(time.Second))+time.Millisecond, time.Millisecond), true, nil
}

// ListenOutbox listens on OutboxChannel on a dedicated connection (not one
// of the pool's), calls wake once listening and at every notification, and
// returns when ctx ends or the connection fails.
func (o *Outbox) ListenOutbox(ctx context.Context, wake func()) error {
	conn, err := pgx.ConnectConfig(ctx, o.db.Pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+OutboxChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	wake() // rows committed while nobody listened
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		wake()
	}
}

// DeleteSent deletes rows sent longer than age ago, in chunks, and returns
// how many it deleted.
func (o *Outbox) DeleteSent(ctx context.Context, age time.Duration) (int64, error) {
	var total int64
	for {
		tag, err := o.db.Pool.Exec(ctx, `
			DELETE FROM outbox WHERE id IN (
				SELECT id FROM outbox WHERE sent_at IS NOT NULL AND sent_at < now() - $1::interval
				LIMIT 10000)`, age)
		if err != nil {
			return total, fmt.Errorf("outbox cleanup: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < 10000 {
			return total, nil
		}
	}
}
