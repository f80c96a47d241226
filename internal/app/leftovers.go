package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"docflow"
	"docflow/storage/postgres"
)

// reviewSingleUserLeftovers records the authentication mode this HTTP
// process starts in and, at the first start with AUTH_ENABLED=true after
// single-user mode (or soon after it, for the other api processes), tells
// the administrators what was made while anyone who reached the server
// acted as the administrator: a warning in the log and a notice on /.
func (m *App) reviewSingleUserLeftovers(ctx context.Context) error {
	now := time.Now()
	if m.cfg.Now != nil {
		now = m.cfg.Now()
	}
	l, err := postgres.NewAuthModeStore(m.DB).RecordStart(ctx, docflow.AuthEnabled.Get(m.Settings), now)
	if err != nil {
		return err
	}
	if l != nil {
		m.notice(leftoversNotice(l))
	}
	return nil
}

// leftoversNotice says what to review, kind by kind, and where.
func leftoversNotice(l *postgres.SingleUserLeftovers) string {
	var b strings.Builder
	b.WriteString("Authentication is on (AUTH_ENABLED=true), but these were made while it was off")
	if l.Since != nil {
		fmt.Fprintf(&b, " (%s to %s)", l.Since.UTC().Format(time.RFC3339), l.Until.UTC().Format(time.RFC3339))
	} else {
		b.WriteString(" (or before this version recorded the mode)")
	}
	b.WriteString(", when anyone who reached the server acted as the administrator; review them and revoke or delete what you do not know:")
	kind := func(lo postgres.Leftovers, what, where string) {
		if lo.Count == 0 {
			return
		}
		fmt.Fprintf(&b, " %d %s (%s): %s", lo.Count, what, where, strings.Join(lo.Examples, "; "))
		if lo.Count > len(lo.Examples) {
			fmt.Fprintf(&b, "; and %d more", lo.Count-len(lo.Examples))
		}
		b.WriteString(".")
	}
	kind(l.Tokens, "active API token(s)", "GET /api/admin/users/{user_id}/tokens")
	kind(l.Hooks, "automation hook(s)", "GET or PUT /api/automation/hooks/{hook_id}")
	kind(l.Webhooks, "webhook(s)", "/api/webhooks/")
	kind(l.Admins, "local administrator account(s)", "/api/admin/users/local")
	return b.String()
}
