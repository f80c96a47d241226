package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"docflow"
)

// AuditLog implements docflow.AuditLog on the audit_log table.
type AuditLog struct{ db *DB }

var _ docflow.AuditLog = (*AuditLog)(nil)

// NewAuditLog returns the audit log on db.
func NewAuditLog(db *DB) *AuditLog {
	if db == nil {
		panic("postgres: NewAuditLog needs a DB")
	}
	return &AuditLog{db: db}
}

// auditField caps what one entry keeps of a caller's text (a user name
// tried at sign-in, a detail), so a hostile request cannot grow the log
// by more than a few kilobytes per line.
const auditField = 1024

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut before the rune that straddles byte n.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// RecordAudit appends e.
func (a *AuditLog) RecordAudit(ctx context.Context, e docflow.AuditEntry) error {
	at := e.At
	if at.IsZero() {
		at = a.db.Now()
	}
	_, err := a.db.Pool.Exec(ctx, `INSERT INTO audit_log (at, actor, action, target, detail, client_ip)
		VALUES ($1, $2, $3, $4, $5, $6)`, at, clip(e.Actor, auditField), clip(e.Action, 64),
		clip(e.Target, auditField), clip(e.Detail, 4*auditField), clip(e.ClientIP, 64))
	if err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// ListAudit returns a page of entries newest first and the total.
func (a *AuditLog) ListAudit(ctx context.Context, f docflow.AuditFilter) ([]docflow.AuditEntry, int, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.From != nil {
		add("at >= ?", *f.From)
	}
	if f.To != nil {
		add("at <= ?", *f.To)
	}
	cond := ""
	if len(where) > 0 {
		cond = " WHERE " + strings.Join(where, " AND ")
	}
	var total int
	if err := a.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_log`+cond, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count audit: %w", err)
	}
	per := f.PerPage
	if per <= 0 {
		per = 50
	}
	page := f.Page
	if page < 1 {
		page = 1
	}
	args = append(args, per, (page-1)*per)
	rows, err := a.db.Pool.Query(ctx, `SELECT id, at, actor, action, target, detail, client_ip FROM audit_log`+cond+
		` ORDER BY at DESC, id DESC LIMIT $`+strconv.Itoa(len(args)-1)+` OFFSET $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list audit: %w", err)
	}
	defer rows.Close()
	out := []docflow.AuditEntry{}
	for rows.Next() {
		var e docflow.AuditEntry
		if err := rows.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Target, &e.Detail, &e.ClientIP); err != nil {
			return nil, 0, err
		}
		out = append(out, e)
	}
	return out, total, rows.Err()
}
