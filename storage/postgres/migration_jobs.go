package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// MigrationJobStore keeps the database wizard's jobs (db_migration_jobs).
type MigrationJobStore struct{ db *DB }

// NewMigrationJobStore returns the store on db.
func NewMigrationJobStore(db *DB) *MigrationJobStore {
	if db == nil {
		panic("postgres: NewMigrationJobStore needs a DB")
	}
	return &MigrationJobStore{db: db}
}

const jobCols = `id, kind, source, target, status, tables, errors, unmapped, created_at, updated_at, finished_at`

func scanJob(row pgx.Row) (*docflow.MigrationJob, error) {
	var j docflow.MigrationJob
	var tables, errs, unmapped []byte
	if err := row.Scan(&j.ID, &j.Kind, &j.Source, &j.Target, &j.Status, &tables, &errs, &unmapped,
		&j.CreatedAt, &j.UpdatedAt, &j.FinishedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(tables, &j.Tables); err != nil {
		return nil, fmt.Errorf("job %d tables: %w", j.ID, err)
	}
	if err := json.Unmarshal(errs, &j.Errors); err != nil {
		return nil, fmt.Errorf("job %d errors: %w", j.ID, err)
	}
	if err := json.Unmarshal(unmapped, &j.Unmapped); err != nil {
		return nil, fmt.Errorf("job %d unmapped: %w", j.ID, err)
	}
	j.Count()
	return &j, nil
}

// Claim returns the job to run for fingerprint, leased to owner for
// lease: the last one of that source and target when it did not finish
// (failed, or running under a lease that lapsed: its process stopped),
// else a new one. When the last one is running under a live lease it is
// returned with taken false: one job at a time per source and target.
func (s *MigrationJobStore) Claim(ctx context.Context, kind, fingerprint, source, target, owner string, lease time.Duration) (*docflow.MigrationJob, bool, error) {
	var job *docflow.MigrationJob
	taken := false
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		// One claim at a time per fingerprint.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7245760))`, fingerprint); err != nil {
			return err
		}
		now := s.db.Now()
		var id int64
		var status, leaseOwner string
		var heartbeat time.Time
		err := tx.QueryRow(ctx, `SELECT id, status, lease_owner, heartbeat_at FROM db_migration_jobs
			WHERE fingerprint = $1 ORDER BY id DESC LIMIT 1`, fingerprint).Scan(&id, &status, &leaseOwner, &heartbeat)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			id = 0
		case err != nil:
			return err
		}
		if id != 0 && status == docflow.MigrationRunning && heartbeat.Add(lease).After(now) {
			j, err := scanJob(tx.QueryRow(ctx, `SELECT `+jobCols+` FROM db_migration_jobs WHERE id = $1`, id))
			job = j
			return err
		}
		taken = true
		if id != 0 && status != docflow.MigrationCompleted {
			j, err := scanJob(tx.QueryRow(ctx, `UPDATE db_migration_jobs SET status = 'running', errors = '[]',
				lease_owner = $2, heartbeat_at = $3, updated_at = $3, finished_at = NULL, source = $4, target = $5
				WHERE id = $1 RETURNING `+jobCols, id, owner, now, source, target))
			job = j
			return err
		}
		j, err := scanJob(tx.QueryRow(ctx, `INSERT INTO db_migration_jobs
			(kind, fingerprint, source, target, lease_owner, heartbeat_at, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6, $6) RETURNING `+jobCols, kind, fingerprint, source, target, owner, now))
		job = j
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("claim migration job: %w", err)
	}
	return job, taken, nil
}

// Save records job's progress and renews owner's lease; ECONFLICT when
// the lease is no longer owner's (another process took the job up).
func (s *MigrationJobStore) Save(ctx context.Context, job *docflow.MigrationJob, owner string) error {
	job.Count()
	tables, _ := json.Marshal(nonNil(job.Tables))
	errs, _ := json.Marshal(nonNil(job.Errors))
	unmapped, _ := json.Marshal(nonNil(job.Unmapped))
	now := s.db.Now()
	var finished *time.Time
	if job.Status != docflow.MigrationRunning {
		finished = &now
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE db_migration_jobs SET status = $3, tables = $4, errors = $5, unmapped = $6,
		heartbeat_at = $7, updated_at = $7, finished_at = $8 WHERE id = $1 AND lease_owner = $2`,
		job.ID, owner, job.Status, tables, errs, unmapped, now, finished)
	if err != nil {
		return fmt.Errorf("save migration job %d: %w", job.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ECONFLICT, "migration job %d was taken up by another process", job.ID)
	}
	job.UpdatedAt = now
	job.FinishedAt = finished
	return nil
}

// Job returns a job by id, or ENOTFOUND.
func (s *MigrationJobStore) Job(ctx context.Context, id int64) (*docflow.MigrationJob, error) {
	j, err := scanJob(s.db.Pool.QueryRow(ctx, `SELECT `+jobCols+` FROM db_migration_jobs WHERE id = $1`, id))
	if err != nil {
		return nil, notFound(err, "Migration job not found")
	}
	return j, nil
}

// Jobs returns the latest jobs, newest first.
func (s *MigrationJobStore) Jobs(ctx context.Context, limit int) ([]*docflow.MigrationJob, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+jobCols+` FROM db_migration_jobs ORDER BY id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("list migration jobs: %w", err)
	}
	defer rows.Close()
	out := []*docflow.MigrationJob{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list migration jobs: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// nonNil keeps JSON arrays arrays when a slice is empty.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
