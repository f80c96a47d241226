package postgres

import (
	"context"

	"docflow"
)

// hookVisible is the condition under which viewer ($2 its user id, $3
// whether an administrator) may see a hook.
const hookVisible = `($3 OR owner_id = $2)`

// FindHook returns hook id when v may see it (its owner, or an
// administrator); ENOTFOUND otherwise, so another user's hook is
// indistinguishable from none.
func (s *AutomationHookStore) FindHook(ctx context.Context, v docflow.HookViewer, id int64) (*docflow.AutomationHook, error) {
	h, err := scanHook(s.db.Pool.QueryRow(ctx, `SELECT `+hookCols+` FROM automation_hooks
		WHERE id = $1 AND `+hookVisible, id, v.UserID, v.Admin))
	if err != nil {
		return nil, notFound(dbErr(err), "Hook not found")
	}
	return h, nil
}

// UpdateHook applies p (validated by the caller) to hook id when v may see
// it. Pausing takes effect for the next event: the fan-out records
// deliveries for active hooks only, and deliveries already queued are
// dropped at their attempt.
func (s *AutomationHookStore) UpdateHook(ctx context.Context, v docflow.HookViewer, id int64, p docflow.AutomationHookPatch) (*docflow.AutomationHook, error) {
	var sealed *string
	if p.Secret != nil {
		val := ""
		if *p.Secret != "" {
			var err error
			if val, err = s.cipher.Encrypt(*p.Secret); err != nil {
				return nil, err
			}
		}
		sealed = &val
	}
	var events []string
	if p.Events != nil {
		if events = *p.Events; events == nil {
			events = []string{}
		}
	}
	h, err := scanHook(s.db.Pool.QueryRow(ctx, `UPDATE automation_hooks SET
			target_url = COALESCE($4, target_url), secret = COALESCE($5, secret),
			events = CASE WHEN $6::boolean THEN $7::text[] ELSE events END,
			is_active = COALESCE($8, is_active), hook_type = COALESCE($9, hook_type),
			description = COALESCE($10, description), updated_at = now()
		WHERE id = $1 AND `+hookVisible+` RETURNING `+hookCols,
		id, v.UserID, v.Admin, p.TargetURL, sealed, p.Events != nil, events, p.IsActive, p.HookType, p.Description))
	if err != nil {
		return nil, notFound(dbErr(err), "Hook not found")
	}
	return h, nil
}
