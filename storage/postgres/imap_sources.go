package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// SourceStore keeps what the processes running IMAP sources share: the
// leases that give each source to one process, the sources' status and
// cursors (integrations.state: "status" as docflow.IntegrationStatus,
// "imap" as docflow.MailCursor), and the mails taken in
// (integration_mail_seen; attachments are recorded by FileStore.Ingest
// with their file).
type SourceStore struct {
	db     *DB
	cipher *Cipher
}

// NewSourceStore returns the store; c decrypts the sources' credentials
// (the settings cipher, which the integrations API encrypts them with).
func NewSourceStore(db *DB, c *Cipher) *SourceStore { return &SourceStore{db: db, cipher: c} }

// activeSource is the condition of the rows ClaimSources leases.
const activeSource = `integration_type='IMAP' AND direction='SOURCE' AND is_active`

// ClaimSources stamps owner as a live worker, renews its leases for ttl,
// and returns every active IMAP source owner holds then, in id order,
// credentials decrypted. Each live worker (stamped within ttl) holds at
// most its fair share, ceil(active sources / live workers): above it, it
// gives up its highest ids (another worker takes them at its next scan);
// below it, it takes free or expired sources up to it. A source nobody
// has taken for a whole ttl after it became free (a worker that died while
// the others were full) is taken whatever the share, so no source stays
// orphaned. A row is leased to one owner at a time: free rows are locked
// (SKIP LOCKED) before they are taken, and the update re-checks the lease.
func (s *SourceStore) ClaimSources(ctx context.Context, owner string, ttl time.Duration) (_ []docflow.SourceClaim, err error) {
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("claim sources: %w", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	secs := ttl.Seconds()
	if _, err := tx.Exec(ctx, `INSERT INTO source_workers (owner, seen_at) VALUES ($1, now())
		ON CONFLICT (owner) DO UPDATE SET seen_at = now()`, owner); err != nil {
		return nil, fmt.Errorf("claim sources: stamp worker: %w", err)
	}
	// Stamps of workers gone long ago are of no use.
	if _, err := tx.Exec(ctx, `DELETE FROM source_workers WHERE seen_at < now() - interval '1 day'`); err != nil {
		return nil, fmt.Errorf("claim sources: %w", err)
	}
	var share int
	if err := tx.QueryRow(ctx, `SELECT ceil(
		  (SELECT count(*) FROM integrations WHERE `+activeSource+`)::numeric /
		  GREATEST((SELECT count(*) FROM source_workers WHERE seen_at > now() - make_interval(secs => $1)), 1))::int`,
		secs).Scan(&share); err != nil {
		return nil, fmt.Errorf("claim sources: share: %w", err)
	}
	// Free rows keep lease_expires_at as the time they became free: a row
	// nobody takes for a whole ttl after is taken regardless of shares.
	if _, err := tx.Exec(ctx, `UPDATE integrations SET lease_owner=NULL, lease_expires_at=now()
		WHERE id IN (SELECT id FROM integrations WHERE `+activeSource+` AND lease_owner=$1
		             ORDER BY id OFFSET $2)`, owner, share); err != nil {
		return nil, fmt.Errorf("claim sources: shed: %w", err)
	}
	rows, err := tx.Query(ctx, `WITH held AS (
		  SELECT count(*) AS n FROM integrations WHERE `+activeSource+` AND lease_owner=$1),
		free AS (
		  SELECT id, COALESCE(lease_expires_at, created_at) < now() - make_interval(secs => $2) AS stale
		  FROM integrations WHERE `+activeSource+` AND (lease_owner IS NULL OR lease_expires_at < now())
		  FOR UPDATE SKIP LOCKED),
		pick AS (
		  SELECT id FROM (SELECT id, stale, row_number() OVER (ORDER BY id) AS rn FROM free) f, held
		  WHERE f.stale OR f.rn <= $3 - held.n)
		UPDATE integrations
		SET lease_owner=$1, lease_expires_at=now() + make_interval(secs => $2)
		WHERE `+activeSource+`
		  AND (lease_owner=$1 OR (id IN (SELECT id FROM pick) AND (lease_owner IS NULL OR lease_expires_at < now())))
		RETURNING id, owner_id, name, config, credentials, is_active, last_error, last_used_at,
		          COALESCE(state->'status', '{}'), COALESCE(state->'imap', '{}'), created_at, updated_at, generation`,
		owner, secs, share)
	if err != nil {
		return nil, fmt.Errorf("claim sources: %w", err)
	}
	defer rows.Close()
	var out []docflow.SourceClaim
	for rows.Next() {
		in := &docflow.Integration{Direction: docflow.DirectionSource, IntegrationType: "IMAP"}
		var config, status, cursor []byte
		var creds string
		c := docflow.SourceClaim{Integration: in}
		if err := rows.Scan(&in.ID, &in.OwnerID, &in.Name, &config, &creds, &in.IsActive, &in.LastError, &in.LastUsedAt,
			&status, &cursor, &in.CreatedAt, &in.UpdatedAt, &c.Generation); err != nil {
			return nil, fmt.Errorf("claim sources: %w", err)
		}
		if err := json.Unmarshal(config, &in.Config); err != nil {
			return nil, fmt.Errorf("claim sources: integration %d config: %w", in.ID, err)
		}
		_ = json.Unmarshal(status, &in.Status) // a malformed status restarts the counters
		_ = json.Unmarshal(cursor, &c.Cursor)  // a malformed cursor rescans the folder; dedup holds
		if in.Credentials, err = s.decrypt(creds); err != nil {
			// The source cannot log in; its actor reports the error.
			in.Credentials = nil
			e := fmt.Sprintf("credentials unreadable: %v", err)
			in.LastError = &e
		}
		in.HasCredentials = creds != ""
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim sources: %w", err)
	}
	rows.Close()
	sort.Slice(out, func(i, j int) bool { return out[i].Integration.ID < out[j].Integration.ID })
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("claim sources: %w", err)
	}
	return out, nil
}

// decrypt opens credentials sealed as an encrypted JSON object of strings
// ("" = none).
func (s *SourceStore) decrypt(enc string) (map[string]string, error) {
	if enc == "" {
		return map[string]string{}, nil
	}
	if s.cipher == nil {
		return nil, errors.New("no cipher")
	}
	plain, err := s.cipher.Decrypt(enc)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	if err := json.Unmarshal([]byte(plain), &out); err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	return out, nil
}

// ReleaseSources gives up owner's leases and its worker stamp (a process
// shutting down), so the other processes take the sources over at their
// next scan, sharing them without it.
func (s *SourceStore) ReleaseSources(ctx context.Context, owner string) error {
	_, err := s.db.Pool.Exec(ctx, `WITH gone AS (DELETE FROM source_workers WHERE owner=$1)
		UPDATE integrations SET lease_owner=NULL, lease_expires_at=now() WHERE lease_owner=$1`, owner)
	if err != nil {
		return fmt.Errorf("release sources: %w", err)
	}
	return nil
}

// MailSeen reports whether the mail key of the integration is finished,
// and which of its attachments were taken in.
func (s *SourceStore) MailSeen(ctx context.Context, integrationID int64, key string) (done bool, attachments []int, err error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT attachment FROM integration_mail_seen
		WHERE integration_id=$1 AND message_key=$2`, integrationID, key)
	if err != nil {
		return false, nil, fmt.Errorf("mail seen: %w", err)
	}
	idx, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return false, nil, fmt.Errorf("mail seen: %w", err)
	}
	for _, i := range idx {
		if i < 0 {
			done = true
		} else {
			attachments = append(attachments, int(i))
		}
	}
	return done, attachments, nil
}

// MailsDone records that the mails keys of the integration are finished,
// in one statement, under the settings' generation the source runs
// under. ENOTFOUND when the integration is gone, inactive or changed
// since (then nothing is recorded: the mails stay unseen).
func (s *SourceStore) MailsDone(ctx context.Context, integrationID, generation int64, keys []string) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO integration_mail_seen (integration_id, message_key, attachment, generation)
		SELECT $1, k, -1, $3 FROM unnest($2::text[]) k ON CONFLICT DO NOTHING`, integrationID, keys, generation)
	if err != nil {
		if e := mailSeenError(err); e != nil {
			return e
		}
		return fmt.Errorf("mail done: %w", err)
	}
	return nil
}

// SaveSourceReport records the status, cursor and last error of a source
// while owner holds its lease (a process that lost it records nothing)
// and the integration's settings are still those of r.Generation (a
// source stopped by a change records nothing after it), without touching
// updated_at: that stamp marks changes of the configuration, which the
// supervisors watch. ENOTFOUND when the row is gone, leased to another
// process or changed.
func (s *SourceStore) SaveSourceReport(ctx context.Context, integrationID int64, owner string, r docflow.SourceReport) error {
	st, err := json.Marshal(r.Status)
	if err != nil {
		return err
	}
	cur, err := json.Marshal(r.Cursor)
	if err != nil {
		return err
	}
	var lastErr *string
	if r.LastError != "" {
		lastErr = &r.LastError
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE integrations
		SET state = state || jsonb_build_object('status', $3::jsonb, 'imap', $4::jsonb),
		    last_error = $5, last_used_at = COALESCE($6, last_used_at)
		WHERE id=$1 AND lease_owner=$2 AND generation=$7`, integrationID, owner, st, cur, lastErr, r.UsedAt, r.Generation)
	if err != nil {
		return fmt.Errorf("save source report: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Integration not found, leased to another process or changed")
	}
	return nil
}

// sqlStateSourceFenced is the fence trigger's refusal (migration 0580).
const sqlStateSourceFenced = "DF001"

// mailSeenInsert remembers a mail attachment (or, with attachment -1, a
// finished mail), with the arguments of mailSeenArgs. Without ON CONFLICT:
// a second record of one attachment must fail its transaction.
// The fence trigger (migration 0580) refuses the row unless the
// integration is active under m.Generation.
const mailSeenInsert = `INSERT INTO integration_mail_seen (integration_id, message_key, attachment, file_id, generation)
	VALUES ($1, $2, $3, $4, $5)`

func mailSeenArgs(m docflow.MailSeen, fileID int64) []any {
	var id *int64
	if fileID > 0 {
		id = &fileID
	}
	return []any{m.IntegrationID, m.MessageKey, m.Attachment, id, m.Generation}
}

// mailSeenError maps the errors of mailSeenInsert that mean something to
// the source: the attachment was taken in already (ECONFLICT), the
// integration is gone, inactive or changed since the source started
// (ENOTFOUND). Others give nil.
func mailSeenError(err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil
	}
	switch {
	case pgErr.Code == "23505" && pgErr.ConstraintName == "integration_mail_seen_pkey":
		return docflow.Errorf(docflow.ECONFLICT, "Mail attachment already taken in")
	case pgErr.Code == "23503" && pgErr.ConstraintName == "integration_mail_seen_integration_id_fkey":
		return docflow.Errorf(docflow.ENOTFOUND, "Integration not found")
	case pgErr.Code == sqlStateSourceFenced:
		return docflow.Errorf(docflow.ENOTFOUND, "Integration changed, stopped or deleted since its source started")
	}
	return nil
}
