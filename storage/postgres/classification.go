package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// ClassificationStore stores classification rules: system rules (owner
// NULL) and each user's own.
type ClassificationStore struct{ db *DB }

// NewClassificationStore returns a ClassificationStore on db.
func NewClassificationStore(db *DB) *ClassificationStore {
	if db == nil {
		panic("postgres: NewClassificationStore needs a DB")
	}
	return &ClassificationStore{db: db}
}

const classRuleCols = `id, owner_id, name, category, rule_type, pattern, priority, case_sensitive, enabled, created_at, updated_at`

func scanClassRule(row pgx.Row) (*docflow.ClassificationRule, error) {
	var r docflow.ClassificationRule
	err := row.Scan(&r.ID, &r.OwnerID, &r.Name, &r.Category, &r.RuleType, &r.Pattern, &r.Priority,
		&r.CaseSensitive, &r.Enabled, &r.CreatedAt, &r.UpdatedAt)
	return &r, err
}

// classRuleOrder lists the highest priority first (the evaluation order),
// then the owner's rules before the system's, then by age.
const classRuleOrder = ` ORDER BY priority DESC, owner_id IS NULL, id`

// FindClassificationRuleByID returns ENOTFOUND for unknown ids.
func (s *ClassificationStore) FindClassificationRuleByID(ctx context.Context, id int64) (*docflow.ClassificationRule, error) {
	r, err := scanClassRule(s.db.Pool.QueryRow(ctx, `SELECT `+classRuleCols+` FROM classification_rules WHERE id=$1`, id))
	if err != nil {
		return nil, wrapErr("find classification rule", notFound(err, "Classification rule not found"))
	}
	return r, nil
}

// FindClassificationRules returns the system rules plus ownerID's own (only
// the system rules for a nil ownerID), highest priority first. enabledOnly
// leaves out disabled rules (what the classify step evaluates).
func (s *ClassificationStore) FindClassificationRules(ctx context.Context, ownerID *string, enabledOnly bool) ([]*docflow.ClassificationRule, error) {
	q := `SELECT ` + classRuleCols + ` FROM classification_rules WHERE (owner_id IS NULL OR owner_id = $1)`
	if enabledOnly {
		q += ` AND enabled`
	}
	rows, err := s.db.Pool.Query(ctx, q+classRuleOrder, ownerID)
	if err != nil {
		return nil, fmt.Errorf("find classification rules: %w", err)
	}
	defer rows.Close()
	out := []*docflow.ClassificationRule{}
	for rows.Next() {
		r, err := scanClassRule(rows)
		if err != nil {
			return nil, fmt.Errorf("find classification rules: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func classConflict(err error, name string) error {
	if isUniqueViolation(err) {
		return docflow.Errorf(docflow.ECONFLICT, "A classification rule named %q already exists", name)
	}
	return err
}

// CreateClassificationRule inserts r (ID and timestamps are set). ECONFLICT
// when the owner already has a rule of that name.
func (s *ClassificationStore) CreateClassificationRule(ctx context.Context, r *docflow.ClassificationRule) error {
	now := s.db.Now()
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO classification_rules
		(owner_id, name, category, rule_type, pattern, priority, case_sensitive, enabled, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9) RETURNING id, created_at, updated_at`,
		r.OwnerID, r.Name, r.Category, r.RuleType, r.Pattern, r.Priority, r.CaseSensitive, r.Enabled, now).
		Scan(&r.ID, &r.CreatedAt, &r.UpdatedAt)
	return wrapErr("create classification rule", classConflict(err, r.Name))
}

// UpdateClassificationRule runs fn on the rule inside one transaction and
// saves it; the owner cannot change. ENOTFOUND, ECONFLICT on a taken name,
// or fn's error.
func (s *ClassificationStore) UpdateClassificationRule(ctx context.Context, id int64, fn func(*docflow.ClassificationRule) error) (*docflow.ClassificationRule, error) {
	var out *docflow.ClassificationRule
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		r, err := scanClassRule(tx.QueryRow(ctx, `SELECT `+classRuleCols+` FROM classification_rules WHERE id=$1 FOR UPDATE`, id))
		if err != nil {
			return notFound(err, "Classification rule not found")
		}
		owner := r.OwnerID
		if err := fn(r); err != nil {
			return err
		}
		r.ID, r.OwnerID = id, owner
		r.UpdatedAt = s.db.Now()
		_, err = tx.Exec(ctx, `UPDATE classification_rules SET name=$2, category=$3, rule_type=$4, pattern=$5,
			priority=$6, case_sensitive=$7, enabled=$8, updated_at=$9 WHERE id=$1`,
			id, r.Name, r.Category, r.RuleType, r.Pattern, r.Priority, r.CaseSensitive, r.Enabled, r.UpdatedAt)
		if err != nil {
			return classConflict(err, r.Name)
		}
		out = r
		return nil
	})
	if err != nil {
		return nil, wrapErr("update classification rule", err)
	}
	return out, nil
}

// DeleteClassificationRule removes a rule. ENOTFOUND.
func (s *ClassificationStore) DeleteClassificationRule(ctx context.Context, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM classification_rules WHERE id=$1`, id)
	if err != nil {
		return fmt.Errorf("delete classification rule: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Classification rule not found")
	}
	return nil
}
