package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// PipelineStore implements docflow.PipelineStore.
type PipelineStore struct{ db *DB }

var _ docflow.PipelineStore = (*PipelineStore)(nil)

// NewPipelineStore returns a PipelineStore on db.
func NewPipelineStore(db *DB) *PipelineStore {
	if db == nil {
		panic("postgres: NewPipelineStore needs a DB")
	}
	return &PipelineStore{db: db}
}

const pipelineCols = `id, owner_id, name, description, is_default, is_active, created_at, updated_at`

func scanPipeline(row pgx.Row) (*docflow.Pipeline, error) {
	var p docflow.Pipeline
	err := row.Scan(&p.ID, &p.OwnerID, &p.Name, &p.Description, &p.IsDefault, &p.IsActive, &p.CreatedAt, &p.UpdatedAt)
	return &p, err
}

const stepCols = `id, pipeline_id, position, step_type, label, enabled, config`

func scanStep(row pgx.Row) (*docflow.PipelineStep, error) {
	var s docflow.PipelineStep
	err := row.Scan(&s.ID, &s.PipelineID, &s.Position, &s.StepType, &s.Label, &s.Enabled, &s.Config)
	if s.Config == nil {
		s.Config = map[string]any{}
	}
	return &s, err
}

// querier is what both a pool and a transaction offer.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pipelineConflict maps the name index violation to ECONFLICT.
func pipelineConflict(err error, name string) error {
	if isUniqueViolation(err) {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.ConstraintName == "pipelines_one_default" {
			return docflow.Errorf(docflow.ECONFLICT, "Another default pipeline was set at the same time")
		}
		return docflow.Errorf(docflow.ECONFLICT, "A pipeline named %q already exists", name)
	}
	return err
}

func loadSteps(ctx context.Context, q querier, ids ...int64) (map[int64][]*docflow.PipelineStep, error) {
	rows, err := q.Query(ctx, `SELECT `+stepCols+` FROM pipeline_steps WHERE pipeline_id = ANY($1) ORDER BY pipeline_id, position, id`, ids)
	if err != nil {
		return nil, fmt.Errorf("load pipeline steps: %w", err)
	}
	defer rows.Close()
	out := map[int64][]*docflow.PipelineStep{}
	for rows.Next() {
		s, err := scanStep(rows)
		if err != nil {
			return nil, fmt.Errorf("load pipeline steps: %w", err)
		}
		out[s.PipelineID] = append(out[s.PipelineID], s)
	}
	return out, rows.Err()
}

func findPipeline(ctx context.Context, q querier, id int64, lock bool) (*docflow.Pipeline, error) {
	sql := `SELECT ` + pipelineCols + ` FROM pipelines WHERE id=$1`
	if lock {
		sql += ` FOR UPDATE`
	}
	p, err := scanPipeline(q.QueryRow(ctx, sql, id))
	if err != nil {
		return nil, notFound(err, "Pipeline not found")
	}
	steps, err := loadSteps(ctx, q, id)
	if err != nil {
		return nil, err
	}
	p.Steps = steps[id]
	if p.Steps == nil {
		p.Steps = []*docflow.PipelineStep{}
	}
	return p, nil
}

// FindPipelineByID returns the pipeline with its steps, or ENOTFOUND;
// EUNAVAILABLE while the database is unreachable.
func (s *PipelineStore) FindPipelineByID(ctx context.Context, id int64) (*docflow.Pipeline, error) {
	p, err := findPipeline(ctx, s.db.Pool, id, false)
	return p, dbErr(err)
}

// FindPipelines returns the owner's and the system pipelines with steps,
// system ones first, each by name.
func (s *PipelineStore) FindPipelines(ctx context.Context, ownerID *string, all bool) ([]*docflow.Pipeline, error) {
	var rows pgx.Rows
	var err error
	order := ` ORDER BY owner_id IS NOT NULL, lower(name), id`
	switch {
	case all && ownerID == nil:
		rows, err = s.db.Pool.Query(ctx, `SELECT `+pipelineCols+` FROM pipelines`+order)
	case ownerID == nil:
		rows, err = s.db.Pool.Query(ctx, `SELECT `+pipelineCols+` FROM pipelines WHERE owner_id IS NULL`+order)
	default:
		rows, err = s.db.Pool.Query(ctx, `SELECT `+pipelineCols+` FROM pipelines WHERE owner_id IS NULL OR owner_id=$1`+order, *ownerID)
	}
	if err != nil {
		return nil, fmt.Errorf("find pipelines: %w", err)
	}
	out := []*docflow.Pipeline{}
	var ids []int64
	for rows.Next() {
		p, err := scanPipeline(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("find pipelines: %w", err)
		}
		out = append(out, p)
		ids = append(ids, p.ID)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find pipelines: %w", err)
	}
	steps, err := loadSteps(ctx, s.db.Pool, ids...)
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		p.Steps = steps[p.ID]
		if p.Steps == nil {
			p.Steps = []*docflow.PipelineStep{}
		}
	}
	return out, nil
}

// clearDefault unsets the owner's other default pipeline.
func clearDefault(ctx context.Context, tx pgx.Tx, ownerID *string, except int64) error {
	_, err := tx.Exec(ctx, `UPDATE pipelines SET is_default=FALSE, updated_at=now()
		WHERE is_default AND COALESCE(owner_id, '') = COALESCE($1, '') AND id <> $2`, ownerID, except)
	return err
}

// CreatePipeline inserts p and its steps.
func (s *PipelineStore) CreatePipeline(ctx context.Context, p *docflow.Pipeline) error {
	if len(p.Steps) > docflow.MaxPipelineSteps {
		return docflow.Errorf(docflow.EINVALID, "A pipeline has at most %d steps", docflow.MaxPipelineSteps)
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if p.IsDefault {
			if err := clearDefault(ctx, tx, p.OwnerID, 0); err != nil {
				return err
			}
		}
		now := s.db.Now()
		err := tx.QueryRow(ctx, `INSERT INTO pipelines (owner_id, name, description, is_default, is_active, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id, created_at, updated_at`,
			p.OwnerID, p.Name, p.Description, p.IsDefault, p.IsActive, now).Scan(&p.ID, &p.CreatedAt, &p.UpdatedAt)
		if err != nil {
			return pipelineConflict(err, p.Name)
		}
		for i, st := range p.Steps {
			st.PipelineID, st.Position = p.ID, i
			if st.Config == nil {
				st.Config = map[string]any{}
			}
			if err := tx.QueryRow(ctx, `INSERT INTO pipeline_steps (pipeline_id, position, step_type, label, enabled, config)
				VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, p.ID, i, st.StepType, st.Label, st.Enabled, st.Config).Scan(&st.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if docflow.ErrorCode(err) != docflow.EINTERNAL {
			return err
		}
		return fmt.Errorf("create pipeline: %w", err)
	}
	if p.Steps == nil {
		p.Steps = []*docflow.PipelineStep{}
	}
	return nil
}

// UpdatePipeline runs fn on the pipeline and saves its own fields.
func (s *PipelineStore) UpdatePipeline(ctx context.Context, id int64, fn func(*docflow.Pipeline) error) (*docflow.Pipeline, error) {
	var out *docflow.Pipeline
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		p, err := findPipeline(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := fn(p); err != nil {
			return err
		}
		if p.IsDefault {
			if err := clearDefault(ctx, tx, p.OwnerID, p.ID); err != nil {
				return err
			}
		}
		err = tx.QueryRow(ctx, `UPDATE pipelines SET name=$2, description=$3, is_default=$4, is_active=$5, updated_at=$6
			WHERE id=$1 RETURNING updated_at`, id, p.Name, p.Description, p.IsDefault, p.IsActive, s.db.Now()).Scan(&p.UpdatedAt)
		if err != nil {
			return pipelineConflict(err, p.Name)
		}
		out = p
		return nil
	})
	if err != nil {
		return nil, wrapErr("update pipeline", err)
	}
	return out, nil
}

// DeletePipeline removes the pipeline (its steps and the rules targeting it
// go with it; files and runs keep going without it).
func (s *PipelineStore) DeletePipeline(ctx context.Context, id int64) error {
	// The delete sets pipeline_id on the files and runs in flight, in
	// another order than the pipeline's own transactions lock them: a
	// deadlock's victim is tried again.
	var tag pgconn.CommandTag
	err := retryConflicts(ctx, 5, func() error {
		var err error
		tag, err = s.db.Pool.Exec(ctx, `DELETE FROM pipelines WHERE id=$1`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete pipeline: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
	}
	return nil
}

// AddStep appends s to the pipeline.
func (s *PipelineStore) AddStep(ctx context.Context, pipelineID int64, st *docflow.PipelineStep) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM pipeline_steps WHERE pipeline_id=p.id)
			FROM pipelines p WHERE p.id=$1 FOR UPDATE`, pipelineID).Scan(&n); err != nil {
			return notFound(err, "Pipeline not found")
		}
		if n >= docflow.MaxPipelineSteps {
			return docflow.Errorf(docflow.EINVALID, "A pipeline has at most %d steps", docflow.MaxPipelineSteps)
		}
		if st.Config == nil {
			st.Config = map[string]any{}
		}
		st.PipelineID, st.Position = pipelineID, n
		if err := tx.QueryRow(ctx, `INSERT INTO pipeline_steps (pipeline_id, position, step_type, label, enabled, config)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, pipelineID, n, st.StepType, st.Label, st.Enabled, st.Config).Scan(&st.ID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE pipelines SET updated_at=$2 WHERE id=$1`, pipelineID, s.db.Now())
		return err
	})
	return wrapErr("add step", err)
}

// UpdateStep runs fn on a step and saves it (position is not changed here).
func (s *PipelineStore) UpdateStep(ctx context.Context, pipelineID, stepID int64, fn func(*docflow.PipelineStep) error) (*docflow.PipelineStep, error) {
	var out *docflow.PipelineStep
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		st, err := scanStep(tx.QueryRow(ctx, `SELECT `+stepCols+` FROM pipeline_steps WHERE id=$1 AND pipeline_id=$2 FOR UPDATE`, stepID, pipelineID))
		if err != nil {
			return notFound(err, "Step not found")
		}
		pos := st.Position
		if err := fn(st); err != nil {
			return err
		}
		st.Position = pos
		if st.Config == nil {
			st.Config = map[string]any{}
		}
		if _, err := tx.Exec(ctx, `UPDATE pipeline_steps SET step_type=$2, label=$3, enabled=$4, config=$5 WHERE id=$1`,
			stepID, st.StepType, st.Label, st.Enabled, st.Config); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE pipelines SET updated_at=$2 WHERE id=$1`, pipelineID, s.db.Now())
		out = st
		return err
	})
	if err != nil {
		return nil, wrapErr("update step", err)
	}
	return out, nil
}

// DeleteStep removes a step and renumbers the rest.
func (s *PipelineStore) DeleteStep(ctx context.Context, pipelineID, stepID int64) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM pipelines WHERE id=$1 FOR UPDATE`, pipelineID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM pipeline_steps WHERE id=$1 AND pipeline_id=$2`, stepID, pipelineID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return docflow.Errorf(docflow.ENOTFOUND, "Step not found")
		}
		if _, err := tx.Exec(ctx, `UPDATE pipeline_steps s SET position = r.n - 1
			FROM (SELECT id, row_number() OVER (ORDER BY position, id) AS n FROM pipeline_steps WHERE pipeline_id=$1) r
			WHERE s.id = r.id AND s.position <> r.n - 1`, pipelineID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE pipelines SET updated_at=$2 WHERE id=$1`, pipelineID, s.db.Now())
		return err
	})
	return wrapErr("delete step", err)
}

// ReorderSteps assigns positions in the order of ids.
func (s *PipelineStore) ReorderSteps(ctx context.Context, pipelineID int64, ids []int64) ([]*docflow.PipelineStep, error) {
	var out []*docflow.PipelineStep
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		p, err := findPipeline(ctx, tx, pipelineID, true)
		if err != nil {
			return err
		}
		if err := checkPermutation(ids, len(p.Steps), func(i int) int64 { return p.Steps[i].ID }, "step"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE pipeline_steps s SET position = u.n - 1
			FROM unnest($2::bigint[]) WITH ORDINALITY AS u(id, n)
			WHERE s.id = u.id AND s.pipeline_id = $1`, pipelineID, ids); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE pipelines SET updated_at=$2 WHERE id=$1`, pipelineID, s.db.Now()); err != nil {
			return err
		}
		steps, err := loadSteps(ctx, tx, pipelineID)
		out = steps[pipelineID]
		return err
	})
	if err != nil {
		return nil, wrapErr("reorder steps", err)
	}
	if out == nil {
		out = []*docflow.PipelineStep{}
	}
	return out, nil
}

// checkPermutation verifies ids names each of the n existing ids once.
func checkPermutation(ids []int64, n int, existing func(int) int64, what string) error {
	bad := func(format string, args ...any) error {
		e := docflow.Errorf(docflow.EINVALID, format, args...)
		e.Fields = []docflow.FieldError{{Field: what + "_ids", Message: e.Message}}
		return e
	}
	have := make(map[int64]bool, n)
	for i := 0; i < n; i++ {
		have[existing(i)] = true
	}
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if !have[id] {
			return bad("%s %d does not belong here", what, id)
		}
		if seen[id] {
			return bad("%s %d is listed twice", what, id)
		}
		seen[id] = true
	}
	if len(ids) != n {
		return bad("the list must name all %d %ss, it names %d", n, what, len(ids))
	}
	return nil
}

// DefaultPipeline returns the owner's active default, else the system's;
// EUNAVAILABLE while the database is unreachable.
func (s *PipelineStore) DefaultPipeline(ctx context.Context, ownerID *string) (_ *docflow.Pipeline, err error) {
	defer mapDBError(&err)
	var id int64
	err = s.db.Pool.QueryRow(ctx, `SELECT id FROM pipelines WHERE is_default AND is_active
		AND (owner_id IS NULL OR owner_id = $1) ORDER BY owner_id IS NULL LIMIT 1`, ownerID).Scan(&id)
	if err != nil {
		return nil, notFound(err, "No default pipeline")
	}
	return s.FindPipelineByID(ctx, id)
}

// wrapErr keeps application errors as they are and wraps the rest.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if docflow.ErrorCode(err) != docflow.EINTERNAL {
		return err
	}
	return fmt.Errorf("%s: %w", what, err)
}
