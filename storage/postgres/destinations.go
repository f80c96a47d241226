package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// DeliveryTaskEncoder builds the outbox message that asks the actor of
// integration integrationID to attempt delivery deliveryID of request
// request (actors/destinations.TaskMessage).
type DeliveryTaskEncoder func(integrationID, deliveryID, request int64) (docflow.OutboxMessage, error)

// DestinationStore owns file_destinations (migration 0600): one row per
// (file, destination) with the state of its latest request, and the task
// messages that drive the destinations' actors, written in the
// transaction that queues or retries a delivery.
type DestinationStore struct {
	db     *DB
	cipher *Cipher
	task   DeliveryTaskEncoder
}

var _ docflow.DestinationStore = (*DestinationStore)(nil)

// NewDestinationStore returns the store on db; c opens integrations'
// credentials for the actors that deliver.
func NewDestinationStore(db *DB, c *Cipher, task DeliveryTaskEncoder) *DestinationStore {
	if db == nil || c == nil || task == nil {
		panic("postgres: NewDestinationStore needs a DB, a Cipher and a DeliveryTaskEncoder")
	}
	return &DestinationStore{db: db, cipher: c, task: task}
}

const fileDestinationColumns = `integration_id, integration_type, name, status, remote_path, error, attempts,
	delivered_at, next_attempt_at, updated_at`

func scanFileDestination(row pgx.Row) (docflow.FileDestination, error) {
	var d docflow.FileDestination
	err := row.Scan(&d.IntegrationID, &d.Type, &d.Name, &d.Status, &d.RemotePath, &d.Error, &d.Attempts,
		&d.DeliveredAt, &d.NextAttemptAt, &d.UpdatedAt)
	return d, err
}

// FileDestinations implements docflow.DestinationStore.
func (s *DestinationStore) FileDestinations(ctx context.Context, fileID int64) (out []docflow.FileDestination, err error) {
	defer mapDBError(&err)
	rows, err := s.db.Pool.Query(ctx, `SELECT `+fileDestinationColumns+` FROM file_destinations
		WHERE file_id = $1 ORDER BY destination <> 'local', integration_id NULLS LAST, id`, fileID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out = []docflow.FileDestination{}
	for rows.Next() {
		d, err := scanFileDestination(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// EnqueueFileDeliveries queues f's delivery to every active destination
// integration of owner (docflow.DestinationStore; owner "" queues none)
// for run runID, and records local, the system-wide folder's delivery.
// A (file, destination) already queued for runID is left as it is, so a
// retried step queues nothing twice. One statement (one round trip, one
// implicit transaction) writes the deliveries and their task messages.
func (s *DestinationStore) EnqueueFileDeliveries(ctx context.Context, f *docflow.File, owner, runID string, local *docflow.FileDestination) (out []docflow.FileDestination, err error) {
	defer mapDBError(&err)
	now := s.db.Now()
	if local != nil {
		if _, err := s.db.Pool.Exec(ctx, `INSERT INTO file_destinations (file_id, destination, integration_type, name, status,
				run_id, attempts, remote_path, error, delivered_at, created_at, updated_at)
			VALUES ($1, 'local', 'LOCAL', $2, $3, $4, 1, $5, $6, $7, $8, $8)
			ON CONFLICT (file_id, destination) DO UPDATE SET name = EXCLUDED.name, status = EXCLUDED.status,
				request = file_destinations.request + CASE WHEN file_destinations.run_id IS DISTINCT FROM EXCLUDED.run_id THEN 1 ELSE 0 END,
				run_id = EXCLUDED.run_id, attempts = 1, remote_path = EXCLUDED.remote_path, error = EXCLUDED.error,
				delivered_at = EXCLUDED.delivered_at, next_attempt_at = NULL, updated_at = EXCLUDED.updated_at`,
			f.ID, local.Name, local.Status, runID, local.RemotePath, local.Error, local.DeliveredAt, now); err != nil {
			return nil, fmt.Errorf("record the local folder's delivery: %w", err)
		}
	}
	out = []docflow.FileDestination{}
	if owner == "" {
		return out, nil
	}
	// Each active destination of the owner gets a new request, unless this
	// run already made one (a step retried after this commit), and its
	// task message.
	rows, err := s.db.Pool.Query(ctx, `
		WITH d AS (
			INSERT INTO file_destinations AS d (file_id, destination, integration_id, integration_type, name, status,
				run_id, created_at, updated_at)
			SELECT $1, i.id::text, i.id, i.integration_type, i.name, 'queued', $3, $4, $4
			FROM integrations i
			WHERE i.owner_id = $2 AND i.direction = 'DESTINATION' AND i.is_active
			ORDER BY i.id
			ON CONFLICT (file_id, destination) DO UPDATE SET status = 'queued', request = d.request + 1,
				run_id = EXCLUDED.run_id, integration_id = EXCLUDED.integration_id, name = EXCLUDED.name,
				attempts = 0, error = NULL, next_attempt_at = NULL, updated_at = EXCLUDED.updated_at
			WHERE d.run_id IS DISTINCT FROM EXCLUDED.run_id
			RETURNING d.id, d.request, `+fileDestinationColumns+`),
		o AS (`+taskInsert("d")+`)
		SELECT `+fileDestinationColumns+` FROM d ORDER BY integration_id`,
		f.ID, owner, runID, now)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		d, err := scanFileDestination(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// taskInsert is the outbox insert of the task messages of the
// deliveries in from (columns id, integration_id, request): the payload
// of actors/destinations.TaskMessage, built in SQL so that a delivery and
// its task are one statement.
//
// NOTE: TaskMessage is the format's definition; the engine's tests, which
// deliver what this statement queued, hold the two together.
func taskInsert(from string) string {
	return `INSERT INTO outbox (topic, key, payload)
			SELECT 'docflow.destinations', x.integration_id::text,
				convert_to(json_build_object('kind', 'deliver', 'integration_id', x.integration_id,
					'delivery_id', x.id, 'request', x.request, 'attempt', 1)::text, 'UTF8')
			FROM ` + from + ` x ORDER BY x.id`
}

// SendFileTo implements docflow.DestinationStore.
func (s *DestinationStore) SendFileTo(ctx context.Context, fileID int64, owner string, integrationID int64) (err error) {
	defer mapDBError(&err)
	return pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var direction, typ, name string
		var active bool
		err := tx.QueryRow(ctx, `SELECT direction, integration_type, name, is_active FROM integrations
			WHERE id = $1 AND owner_id = $2 FOR SHARE`, integrationID, owner).Scan(&direction, &typ, &name, &active)
		if errors.Is(err, pgx.ErrNoRows) {
			return errIntegrationNotFound()
		} else if err != nil {
			return err
		}
		switch {
		case direction != docflow.DirectionDestination:
			return docflow.Errorf(docflow.EINVALID, "Integration %d is not a destination", integrationID)
		case !active:
			return docflow.Errorf(docflow.EINVALID, "Integration %d is not active", integrationID)
		}
		var id, request int64
		err = tx.QueryRow(ctx, `
			INSERT INTO file_destinations AS d (file_id, destination, integration_id, integration_type, name, status,
				created_at, updated_at)
			SELECT f.id, ($2::bigint)::text, $2::bigint, $3, $4, 'queued', $5, $5 FROM files f WHERE f.id = $1
			ON CONFLICT (file_id, destination) DO UPDATE SET status = 'queued', request = d.request + 1,
				integration_id = EXCLUDED.integration_id, name = EXCLUDED.name,
				attempts = 0, error = NULL, next_attempt_at = NULL, updated_at = EXCLUDED.updated_at
			RETURNING d.id, d.request`, fileID, integrationID, typ, name, s.db.Now()).Scan(&id, &request)
		if errors.Is(err, pgx.ErrNoRows) {
			return docflow.Errorf(docflow.ENOTFOUND, "File not found")
		} else if err != nil {
			return err
		}
		m, err := s.task(integrationID, id, request)
		if err != nil {
			return err
		}
		return Enqueue(ctx, tx, m)
	})
}

// DestinationIntegration returns integration id with its credentials
// decrypted and its generation, for the actor that delivers to it.
// ENOTFOUND when it is gone.
func (s *DestinationStore) DestinationIntegration(ctx context.Context, id int64) (_ *docflow.Integration, generation int64, err error) {
	defer mapDBError(&err)
	var sealed string
	row := s.db.Pool.QueryRow(ctx, `SELECT credentials, generation, `+integrationColumns+` FROM integrations WHERE id = $1`, id)
	var in *docflow.Integration
	// The columns: credentials, generation, then the integration's.
	in, err = scanIntegration(integrationScanFirst{row: integrationScanFirst{row: row, first: &sealed}, first: &generation})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, errIntegrationNotFound()
	} else if err != nil {
		return nil, 0, err
	}
	if in.Credentials, err = (&IntegrationStore{db: s.db, cipher: s.cipher}).open(sealed); err != nil {
		return nil, 0, err
	}
	return in, generation, nil
}

// StartDelivery begins attempt number attempt of delivery id for
// request: the delivery becomes sending with one more attempt under a new
// claim whose lease ends after lease, and the task says what to deliver.
// Nil (and no change) when the delivery is gone, belongs to another
// integration, a later request replaced it, it is already delivered,
// failed or cancelled, or the attempt was made already (a copy of its
// task, published again while the delivery waits for its retry: the
// retry's own task asks for the next attempt when it is due). A
// *docflow.DeliveryClaimedError when another attempt holds it: a
// delivery that is sending is claimed again only once its claim's lease
// ended (its process died; the task of the attempt it was making takes
// it over), so one delivery is never sent by two attempts at once.
// Attempt 0 (a task written before tasks named their attempt) starts
// whichever attempt is next.
func (s *DestinationStore) StartDelivery(ctx context.Context, id, integrationID, request int64, attempt int, lease time.Duration) (_ *docflow.DeliveryTask, err error) {
	defer mapDBError(&err)
	now := s.db.Now()
	t := docflow.DeliveryTask{DeliveryID: id, IntegrationID: integrationID, Request: request, Claim: newClaim()}
	f, err := scanFile(s.db.Pool.QueryRow(ctx, `
		WITH d AS (
			UPDATE file_destinations SET status = 'sending', attempts = attempts + 1, updated_at = $4,
				claim = $5, claim_until = $6
			WHERE id = $1 AND integration_id = $2 AND request = $3 AND (status IN ('queued', 'retrying')
				OR status = 'sending' AND (claim_until IS NULL OR claim_until <= $4))
				AND ($7 = 0 OR attempts < $7 OR status = 'sending' AND attempts = $7)
			RETURNING file_id, attempts)
		SELECT `+fileCols+`, d.attempts FROM d JOIN files f ON f.id = d.file_id`,
		id, integrationID, request, now, t.Claim, now.Add(lease), attempt), false, &t.Attempt)
	if errors.Is(err, pgx.ErrNoRows) {
		var until time.Time
		err := s.db.Pool.QueryRow(ctx, `SELECT claim_until FROM file_destinations
			WHERE id = $1 AND integration_id = $2 AND request = $3 AND status = 'sending' AND claim_until IS NOT NULL
				AND ($4 = 0 OR attempts <= $4)`,
			id, integrationID, request, attempt).Scan(&until)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, err
		}
		return nil, &docflow.DeliveryClaimedError{Until: until}
	} else if err != nil {
		return nil, err
	}
	if tags, ok := f.AIMetadata["tags"].([]any); ok {
		for _, v := range tags {
			if s, ok := v.(string); ok {
				t.Doc.Tags = append(t.Doc.Tags, s)
			}
		}
	}
	t.FileID = f.ID
	ext := ""
	t.Blob, t.Doc.MimeType = f.OriginalBlob, f.MimeType
	if f.ProcessedBlob != "" {
		t.Blob, t.Doc.MimeType, ext = f.ProcessedBlob, "application/pdf", ".pdf"
	} else if e := path.Ext(f.OriginalFilename); e != "" {
		ext = strings.ToLower(e)
	}
	t.Fields = docflow.FilenameFieldsOf(f, ext)
	t.Doc.FileID, t.Doc.Title, t.Doc.Date, t.Doc.Category = f.ID, t.Fields.Title, t.Fields.Date, t.Fields.Category
	t.Doc.OriginalFilename, t.Doc.Metadata = f.OriginalFilename, f.AIMetadata
	if c, ok := f.AIMetadata["sender"].(string); ok {
		t.Doc.Correspondent = strings.TrimSpace(c)
	}
	return &t, nil
}

// newClaim is a new attempt's token (never 0).
func newClaim() int64 {
	return rand.Int64N(math.MaxInt64-1) + 1
}

// RenewDeliveryClaims extends the leases of claims, the attempts a
// process holds (prepared or under way), to lease from now.
func (s *DestinationStore) RenewDeliveryClaims(ctx context.Context, claims []int64, lease time.Duration) (err error) {
	defer mapDBError(&err)
	_, err = s.db.Pool.Exec(ctx, `UPDATE file_destinations SET claim_until = $2
		WHERE claim = ANY($1) AND status = 'sending'`, claims, s.db.Now().Add(lease))
	return err
}

// ReleaseDeliveryClaims gives back claims whose attempts were not made
// (their process no longer owns the deliveries): the attempt is not
// counted, and the next owner claims the delivery without waiting for the
// lease to end.
func (s *DestinationStore) ReleaseDeliveryClaims(ctx context.Context, claims []int64) (err error) {
	defer mapDBError(&err)
	_, err = s.db.Pool.Exec(ctx, `UPDATE file_destinations SET claim_until = NULL, attempts = greatest(attempts - 1, 0)
		WHERE claim = ANY($1) AND status = 'sending'`, claims)
	return err
}

// FinishDelivery records how an attempt ended, if its request is still
// the delivery's latest: the delivery's state, the file's processing log
// line, the integration's status counters and last_error (not for a
// cancelled delivery), the provider among the file's storage providers
// (when delivered), and retry, the task message of the next attempt
// (delayed to its time through the outbox). One statement does it all, in
// one round trip and one implicit transaction. It reports false when a
// later request replaced this one, or another attempt took the delivery
// over from o.Claim (nothing is recorded).
func (s *DestinationStore) FinishDelivery(ctx context.Context, o docflow.DeliveryOutcome, retry *docflow.OutboxMessage) (recorded bool, err error) {
	defer mapDBError(&err)
	args, err := finishArgs(o, retry)
	if err != nil {
		return false, err
	}
	var n int
	if err := s.db.Pool.QueryRow(ctx, finishSQL, args...).Scan(&n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// FinishDeliveries is FinishDelivery for several outcomes at once (of
// different deliveries): one round trip and one implicit transaction for
// them all (a pipeline of statements), so that an integration's
// outcomes, which all update its row, share one lock and one commit. It
// reports, in order, which were recorded; an error records none.
func (s *DestinationStore) FinishDeliveries(ctx context.Context, fs []docflow.DeliveryFinish) (recorded []bool, err error) {
	defer mapDBError(&err)
	b := &pgx.Batch{}
	for _, f := range fs {
		args, err := finishArgs(f.Outcome, f.Retry)
		if err != nil {
			return nil, err
		}
		b.Queue(finishSQL, args...)
	}
	br := s.db.Pool.SendBatch(ctx, b)
	defer br.Close()
	recorded = make([]bool, len(fs))
	for i := range fs {
		var n int
		if err := br.QueryRow().Scan(&n); err != nil {
			return nil, err
		}
		recorded[i] = n > 0
	}
	return recorded, br.Close()
}

// finishSQL is FinishDelivery's statement; finishArgs its parameters.
var finishSQL = `
		WITH d AS (
			UPDATE file_destinations SET status = $3, remote_path = CASE WHEN $4 = '' THEN remote_path ELSE $4 END,
				error = $5, next_attempt_at = $6, delivered_at = COALESCE($7, delivered_at), updated_at = $8
			WHERE id = $1 AND request = $2 AND ($14::bigint = 0 OR claim = $14::bigint)
			RETURNING file_id, integration_type, COALESCE(run_id, '') AS run_id),
		f AS (
			UPDATE files SET storage_providers = array_append(storage_providers, lower(d.integration_type))
			FROM d WHERE files.id = d.file_id AND $3 = 'delivered' AND NOT lower(d.integration_type) = ANY(files.storage_providers)),
		l AS (
			INSERT INTO processing_logs (file_id, task_id, step_name, status, message, timestamp)
			SELECT d.file_id, d.run_id, '` + docflow.StepSendToDestinations + `', $9, $10, $8 FROM d WHERE $10 <> ''),
		i AS (
			UPDATE integrations SET
				state = jsonb_set(state, '{status}', COALESCE(state->'status', '{}') || jsonb_build_object(
					'deliveries_ok', COALESCE((state->'status'->>'deliveries_ok')::bigint, 0) + $12,
					'deliveries_failed', COALESCE((state->'status'->>'deliveries_failed')::bigint, 0) + $13)),
				last_used_at = CASE WHEN $12 > 0 THEN $8 ELSE last_used_at END,
				last_error = CASE WHEN $12 > 0 THEN NULL ELSE $5 END
			FROM d WHERE integrations.id = $11 AND $3 <> 'cancelled'),
		o AS (` + outboxInsert{at: 15, from: "d"}.sql() + `)
		SELECT count(*) FROM d`

func finishArgs(o docflow.DeliveryOutcome, retry *docflow.OutboxMessage) ([]any, error) {
	var errText *string
	if o.Error != "" {
		errText = &o.Error
	}
	var deliveredAt *time.Time
	if o.Status == docflow.DestinationDelivered {
		deliveredAt = &o.At
	}
	logStatus := "failed"
	var ok, failed int64
	switch o.Status {
	case docflow.DestinationDelivered:
		logStatus, ok = "completed", 1
	case docflow.DestinationCancelled:
		logStatus = "skipped"
	default:
		failed = 1
	}
	var msgs []docflow.OutboxMessage
	if retry != nil {
		msgs = append(msgs, *retry)
	}
	cols, err := outboxArrays(msgs)
	if err != nil {
		return nil, err
	}
	args := []any{o.DeliveryID, o.Request, o.Status, o.RemotePath, errText, o.NextAttemptAt, deliveredAt, o.At,
		logStatus, o.Log, o.IntegrationID, ok, failed, o.Claim}
	return append(args, cols.args()...), nil
}

// CancelDeliveries cancels the deliveries of integration id still
// waiting (queued or retrying) with reason, and returns how many: the
// integration was deleted or deactivated.
func (s *DestinationStore) CancelDeliveries(ctx context.Context, id int64, reason string) (n int64, err error) {
	defer mapDBError(&err)
	tag, err := s.db.Pool.Exec(ctx, `UPDATE file_destinations SET status = 'cancelled', error = $2, next_attempt_at = NULL,
			updated_at = $3
		WHERE destination = $1 AND status IN ('queued', 'retrying', 'sending')`, strconv.FormatInt(id, 10), reason, s.db.Now())
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

// RecordIntegrationState reports a destination's connection state in its
// status, with lastError as last_error when not nil (a connect failure).
// ENOTFOUND when the integration is gone.
func (s *DestinationStore) RecordIntegrationState(ctx context.Context, id int64, state string, lastError *string) error {
	return (&IntegrationStore{db: s.db, cipher: s.cipher}).RecordIntegrationStatus(ctx, id,
		docflow.IntegrationStatusUpdate{State: &state, Error: lastError})
}
