package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// SourceStore keeps what the processes running IMAP sources share: the
// leases that give each source to one process, the sources' status and
// cursors (integrations.state: "status" as docflow.IntegrationStatus,
// "imap" as docflow.MailCursor), and the mails taken in
// (integration_mail_seen; attachments are recorded by FileService.Ingest
// with their file).
type SourceStore struct {
	db     *DB
	cipher *Cipher
}

// NewSourceStore returns the store; c decrypts the sources' credentials
// (the settings cipher, which the integrations API encrypts them with).
func NewSourceStore(db *DB, c *Cipher) *SourceStore { return &SourceStore{db: db, cipher: c} }

// ClaimSources renews owner's leases for ttl, takes the active IMAP
// sources whose lease is free or expired, and returns every source owner
// holds now, in id order, credentials decrypted. A row is leased to one
// owner at a time: the update re-checks the lease under the row's lock.
func (s *SourceStore) ClaimSources(ctx context.Context, owner string, ttl time.Duration) ([]docflow.SourceClaim, error) {
	rows, err := s.db.Pool.Query(ctx, `UPDATE integrations
		SET lease_owner=$1, lease_expires_at=now() + make_interval(secs => $2)
		WHERE integration_type='IMAP' AND direction='SOURCE' AND is_active
		  AND (lease_owner=$1 OR lease_owner IS NULL OR lease_expires_at < now())
		RETURNING id, owner_id, name, config, credentials, is_active, last_error, last_used_at,
		          COALESCE(state->'status', '{}'), COALESCE(state->'imap', '{}'), created_at, updated_at`,
		owner, ttl.Seconds())
	if err != nil {
		return nil, fmt.Errorf("claim sources: %w", err)
	}
	defer rows.Close()
	var out []docflow.SourceClaim
	for rows.Next() {
		in := &docflow.Integration{Direction: docflow.DirectionSource, IntegrationType: "IMAP"}
		var config, status, cursor []byte
		var creds string
		if err := rows.Scan(&in.ID, &in.OwnerID, &in.Name, &config, &creds, &in.IsActive, &in.LastError, &in.LastUsedAt,
			&status, &cursor, &in.CreatedAt, &in.UpdatedAt); err != nil {
			return nil, fmt.Errorf("claim sources: %w", err)
		}
		c := docflow.SourceClaim{Integration: in}
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

// ReleaseSources gives up owner's leases (a process shutting down), so
// another process takes the sources over at its next scan.
func (s *SourceStore) ReleaseSources(ctx context.Context, owner string) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE integrations SET lease_owner=NULL, lease_expires_at=NULL WHERE lease_owner=$1`, owner)
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
// in one statement. ENOTFOUND when the integration is gone.
func (s *SourceStore) MailsDone(ctx context.Context, integrationID int64, keys []string) error {
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO integration_mail_seen (integration_id, message_key, attachment)
		SELECT $1, k, -1 FROM unnest($2::text[]) k ON CONFLICT DO NOTHING`, integrationID, keys)
	if err != nil {
		if e := mailSeenError(err); e != nil {
			return e
		}
		return fmt.Errorf("mail done: %w", err)
	}
	return nil
}

// SaveSourceReport records the status, cursor and last error of a source
// while owner holds its lease (a process that lost it records nothing),
// without touching updated_at: that stamp marks changes of the
// configuration, which the supervisors watch. ENOTFOUND when the row is
// gone or leased to another process.
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
		WHERE id=$1 AND lease_owner=$2`, integrationID, owner, st, cur, lastErr, r.UsedAt)
	if err != nil {
		return fmt.Errorf("save source report: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Integration not found or leased to another process")
	}
	return nil
}

// mailSeenInsert remembers a mail attachment (or, with attachment -1, a
// finished mail), with the arguments of mailSeenArgs. Without ON CONFLICT:
// a second record of one attachment must fail its transaction.
const mailSeenInsert = `INSERT INTO integration_mail_seen (integration_id, message_key, attachment, file_id)
	VALUES ($1, $2, $3, $4)`

func mailSeenArgs(m docflow.MailSeen, fileID int64) []any {
	var id *int64
	if fileID > 0 {
		id = &fileID
	}
	return []any{m.IntegrationID, m.MessageKey, m.Attachment, id}
}

// mailSeenError maps the errors of mailSeenInsert that mean something to
// the source: the attachment was taken in already (ECONFLICT), the
// integration is gone (ENOTFOUND). Others give nil.
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
	}
	return nil
}
