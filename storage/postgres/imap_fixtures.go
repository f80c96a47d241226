package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"docflow"
)

// AddSourceFixture records an integration as the integrations API would
// (credentials encrypted with the store's cipher), for the tests and
// benchmarks of the sources. It sets in.ID.
func (s *SourceStore) AddSourceFixture(ctx context.Context, in *docflow.Integration) error {
	cfg, err := json.Marshal(in.Config)
	if err != nil {
		return err
	}
	creds := ""
	if len(in.Credentials) > 0 {
		b, err := json.Marshal(in.Credentials)
		if err != nil {
			return err
		}
		if creds, err = s.cipher.Encrypt(string(b)); err != nil {
			return err
		}
	}
	err = s.db.Pool.QueryRow(ctx, `INSERT INTO integrations (owner_id, direction, integration_type, name, config, credentials, is_active)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, in.OwnerID, in.Direction, in.IntegrationType, in.Name, cfg, creds, in.IsActive).Scan(&in.ID)
	if err != nil {
		return fmt.Errorf("add source fixture: %w", err)
	}
	return nil
}

// UpdateSourceFixture changes an integration's config and activity as the
// integrations API would (updated_at moves), or deletes it (del).
func (s *SourceStore) UpdateSourceFixture(ctx context.Context, in *docflow.Integration, del bool) error {
	if del {
		_, err := s.db.Pool.Exec(ctx, `DELETE FROM integrations WHERE id=$1`, in.ID)
		return err
	}
	cfg, err := json.Marshal(in.Config)
	if err != nil {
		return err
	}
	_, err = s.db.Pool.Exec(ctx, `UPDATE integrations SET config=$2, is_active=$3, updated_at=clock_timestamp() WHERE id=$1`,
		in.ID, cfg, in.IsActive)
	return err
}

// SourceRow is what a source's row says now (tests).
func (s *SourceStore) SourceRow(ctx context.Context, id int64) (status docflow.IntegrationStatus, lastError *string, leaseOwner *string, err error) {
	var st []byte
	err = s.db.Pool.QueryRow(ctx, `SELECT COALESCE(state->'status','{}'), last_error, lease_owner FROM integrations WHERE id=$1`, id).
		Scan(&st, &lastError, &leaseOwner)
	if err == nil {
		err = json.Unmarshal(st, &status)
	}
	return
}

// CountMailFiles counts the files of channel email and the distinct
// attachments they were taken in as (tests: equal when nothing was taken
// twice).
func (s *SourceStore) CountMailFiles(ctx context.Context, integrationID int64) (files, attachments int, err error) {
	err = s.db.Pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM files WHERE source='email' AND (ai_metadata->'email'->>'integration_id')::bigint=$1),
		(SELECT count(*) FROM integration_mail_seen WHERE integration_id=$1 AND attachment >= 0)`, integrationID).
		Scan(&files, &attachments)
	return
}
