package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// RoutingStore implements docflow.RoutingStore.
type RoutingStore struct {
	db        *DB
	pipelines *PipelineStore
}

var _ docflow.RoutingStore = (*RoutingStore)(nil)

// NewRoutingStore returns a RoutingStore on db.
func NewRoutingStore(db *DB) *RoutingStore {
	if db == nil {
		panic("postgres: NewRoutingStore needs a DB")
	}
	return &RoutingStore{db: db, pipelines: NewPipelineStore(db)}
}

const ruleCols = `id, owner_id, name, position, field, operator, value, target_pipeline_id, is_active, created_at, updated_at`

func scanRule(row pgx.Row) (*docflow.RoutingRule, error) {
	var r docflow.RoutingRule
	err := row.Scan(&r.ID, &r.OwnerID, &r.Name, &r.Position, &r.Field, &r.Operator, &r.Value,
		&r.TargetPipelineID, &r.IsActive, &r.CreatedAt, &r.UpdatedAt)
	return &r, err
}

func collectRules(rows pgx.Rows, err error) ([]*docflow.RoutingRule, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*docflow.RoutingRule{}
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// FindRuleByID returns ENOTFOUND for unknown ids.
func (s *RoutingStore) FindRuleByID(ctx context.Context, id int64) (*docflow.RoutingRule, error) {
	r, err := scanRule(s.db.Pool.QueryRow(ctx, `SELECT `+ruleCols+` FROM routing_rules WHERE id=$1`, id))
	if err != nil {
		return nil, notFound(err, "Routing rule not found")
	}
	return r, nil
}

// ruleOrder puts the owner's rules before the system rules, each by position.
const ruleOrder = ` ORDER BY owner_id IS NULL, owner_id, position, id`

// FindRules returns the owner's then the system rules.
func (s *RoutingStore) FindRules(ctx context.Context, ownerID *string, all bool) ([]*docflow.RoutingRule, error) {
	var out []*docflow.RoutingRule
	var err error
	switch {
	case all && ownerID == nil:
		out, err = collectRules(s.db.Pool.Query(ctx, `SELECT `+ruleCols+` FROM routing_rules`+ruleOrder))
	case ownerID == nil:
		out, err = collectRules(s.db.Pool.Query(ctx, `SELECT `+ruleCols+` FROM routing_rules WHERE owner_id IS NULL`+ruleOrder))
	default:
		out, err = collectRules(s.db.Pool.Query(ctx, `SELECT `+ruleCols+` FROM routing_rules WHERE owner_id IS NULL OR owner_id=$1`+ruleOrder, *ownerID))
	}
	if err != nil {
		return nil, fmt.Errorf("find routing rules: %w", err)
	}
	return out, nil
}

// lockOwnerRules serialises position changes of one owner's rules.
func lockOwnerRules(ctx context.Context, tx pgx.Tx, ownerID *string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7245002, hashtext(COALESCE($1, '')))`, ownerID)
	return err
}

// CreateRule inserts r. Position < 0 appends; otherwise the owner's rules at
// or after that position move down one.
func (s *RoutingStore) CreateRule(ctx context.Context, r *docflow.RoutingRule) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := lockOwnerRules(ctx, tx, r.OwnerID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM routing_rules WHERE owner_id IS NOT DISTINCT FROM $1`, r.OwnerID).Scan(&n); err != nil {
			return err
		}
		if r.Position < 0 || r.Position > n {
			r.Position = n
		} else if _, err := tx.Exec(ctx, `UPDATE routing_rules SET position = position + 1
			WHERE owner_id IS NOT DISTINCT FROM $1 AND position >= $2`, r.OwnerID, r.Position); err != nil {
			return err
		}
		now := s.db.Now()
		return tx.QueryRow(ctx, `INSERT INTO routing_rules (owner_id, name, position, field, operator, value, target_pipeline_id, is_active, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id, created_at, updated_at`,
			r.OwnerID, r.Name, r.Position, r.Field, r.Operator, r.Value, r.TargetPipelineID, r.IsActive, now).
			Scan(&r.ID, &r.CreatedAt, &r.UpdatedAt)
	})
	return wrapErr("create routing rule", err)
}

// UpdateRule runs fn on the rule and saves it; a changed position moves the
// owner's other rules to make room.
func (s *RoutingStore) UpdateRule(ctx context.Context, id int64, fn func(*docflow.RoutingRule) error) (*docflow.RoutingRule, error) {
	var out *docflow.RoutingRule
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		r, err := scanRule(tx.QueryRow(ctx, `SELECT `+ruleCols+` FROM routing_rules WHERE id=$1`, id))
		if err != nil {
			return notFound(err, "Routing rule not found")
		}
		if err := lockOwnerRules(ctx, tx, r.OwnerID); err != nil {
			return err
		}
		oldPos := r.Position
		owner := r.OwnerID
		if err := fn(r); err != nil {
			return err
		}
		r.OwnerID = owner
		if r.Position != oldPos {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM routing_rules WHERE owner_id IS NOT DISTINCT FROM $1`, owner).Scan(&n); err != nil {
				return err
			}
			if r.Position < 0 || r.Position >= n {
				r.Position = n - 1
			}
			// Close the gap at the old place, open one at the new.
			if _, err := tx.Exec(ctx, `UPDATE routing_rules SET position = position - 1
				WHERE owner_id IS NOT DISTINCT FROM $1 AND position > $2 AND id <> $3`, owner, oldPos, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE routing_rules SET position = position + 1
				WHERE owner_id IS NOT DISTINCT FROM $1 AND position >= $2 AND id <> $3`, owner, r.Position, id); err != nil {
				return err
			}
		}
		err = tx.QueryRow(ctx, `UPDATE routing_rules SET name=$2, position=$3, field=$4, operator=$5, value=$6,
			target_pipeline_id=$7, is_active=$8, updated_at=$9 WHERE id=$1 RETURNING updated_at`,
			id, r.Name, r.Position, r.Field, r.Operator, r.Value, r.TargetPipelineID, r.IsActive, s.db.Now()).Scan(&r.UpdatedAt)
		out = r
		return err
	})
	if err != nil {
		return nil, wrapErr("update routing rule", err)
	}
	return out, nil
}

// DeleteRule removes a rule and closes the gap in positions.
func (s *RoutingStore) DeleteRule(ctx context.Context, id int64) error {
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var owner *string
		var pos int
		if err := tx.QueryRow(ctx, `DELETE FROM routing_rules WHERE id=$1 RETURNING owner_id, position`, id).Scan(&owner, &pos); err != nil {
			return notFound(err, "Routing rule not found")
		}
		if err := lockOwnerRules(ctx, tx, owner); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE routing_rules SET position = position - 1
			WHERE owner_id IS NOT DISTINCT FROM $1 AND position > $2`, owner, pos)
		return err
	})
	return wrapErr("delete routing rule", err)
}

// ReorderRules assigns positions in the order of ids (all of the owner's rules).
func (s *RoutingStore) ReorderRules(ctx context.Context, ownerID *string, ids []int64) ([]*docflow.RoutingRule, error) {
	var out []*docflow.RoutingRule
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := lockOwnerRules(ctx, tx, ownerID); err != nil {
			return err
		}
		rules, err := collectRules(tx.Query(ctx, `SELECT `+ruleCols+` FROM routing_rules WHERE owner_id IS NOT DISTINCT FROM $1`+ruleOrder, ownerID))
		if err != nil {
			return err
		}
		if err := checkPermutation(ids, len(rules), func(i int) int64 { return rules[i].ID }, "rule"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE routing_rules r SET position = u.n - 1, updated_at = $2
			FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, n) WHERE r.id = u.id`, ids, s.db.Now()); err != nil {
			return err
		}
		out, err = collectRules(tx.Query(ctx, `SELECT `+ruleCols+` FROM routing_rules WHERE owner_id IS NOT DISTINCT FROM $1`+ruleOrder, ownerID))
		return err
	})
	if err != nil {
		return nil, wrapErr("reorder routing rules", err)
	}
	return out, nil
}

// ActiveRules returns the active rules that apply to the owner, whose
// target pipeline is active: the owner's first, then the system's, each by
// position (the order Route evaluates them in). EUNAVAILABLE while the
// database is unreachable.
func (s *RoutingStore) ActiveRules(ctx context.Context, ownerID *string) ([]*docflow.RoutingRule, error) {
	rules, err := collectRules(s.db.Pool.Query(ctx, `SELECT `+prefixed("r.", ruleCols)+` FROM routing_rules r
		JOIN pipelines p ON p.id = r.target_pipeline_id AND p.is_active
		WHERE r.is_active AND (r.owner_id IS NULL OR r.owner_id = $1)
		ORDER BY r.owner_id IS NULL, r.position, r.id`, ownerID))
	if err != nil {
		return nil, dbErr(fmt.Errorf("active routing rules: %w", err))
	}
	return rules, nil
}

// Route evaluates the active rules whose target pipeline is active: the
// owner's first, then the system's, each by position; the first match wins.
func (s *RoutingStore) Route(ctx context.Context, ownerID *string, in docflow.RoutingInput) (*docflow.RoutingRule, *docflow.Pipeline, error) {
	rules, err := s.ActiveRules(ctx, ownerID)
	if err != nil {
		return nil, nil, err
	}
	return docflow.MatchRules(ctx, rules, in, s.pipelines.FindPipelineByID)
}

// prefixed qualifies each column of a comma-separated list.
func prefixed(prefix, cols string) string {
	out := make([]byte, 0, len(cols)*2)
	out = append(out, prefix...)
	for i := 0; i < len(cols); i++ {
		out = append(out, cols[i])
		if cols[i] == ',' {
			for i+1 < len(cols) && cols[i+1] == ' ' {
				i++
				out = append(out, ' ')
			}
			out = append(out, prefix...)
		}
	}
	return string(out)
}
