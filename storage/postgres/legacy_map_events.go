package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// The original's webhooks and integrations, mapped (legacy_map.go has the
// order of the tables and the others).

func mapWebhook(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	events, ok := ljsonStrings(r, "events")
	if !ok {
		return 0, "its events are not a JSON list", nil
	}
	var kept []string
	for _, e := range docflow.EventNames {
		for _, x := range events {
			if x == e && docflow.IsDeliverable(e) {
				kept = append(kept, e)
				break
			}
		}
	}
	if len(kept) == 0 {
		return 0, "none of its events is one docflow delivers", nil
	}
	note := ""
	if len(kept) < len(events) {
		note = "events docflow does not deliver were dropped"
	}
	desc := lstr(r, "description")
	if utf8.RuneCountInString(desc) > 1000 {
		desc = string([]rune(desc)[:1000])
	}
	id, err := insertID(ctx, tx, `INSERT INTO webhooks (url, secret, events, is_active, description, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, strings.TrimSpace(lstr(r, "url")), lstr(r, "secret"), kept,
		lbool(r, "is_active", true), desc, ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	return id, note, err
}

// legacySealed is the reason of an integration imported without its
// credentials.
const legacySealed = "imported inactive without credentials (the original sealed them with its own key): enter them again and activate it"

func mapIntegration(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	typ := strings.ToUpper(strings.TrimSpace(lstr(r, "integration_type")))
	t, ok := docflow.LookupIntegrationType(typ)
	if !ok {
		return 0, "an integration type docflow does not have", nil
	}
	if dir := strings.ToUpper(lstr(r, "direction")); dir != string(t.Direction) {
		return 0, "its direction does not match docflow's for this type", nil
	}
	cfg, _ := ljsonObject(r, "config")
	kept := map[string]any{}
	for k, v := range cfg {
		if _, known := t.Key(k); known {
			kept[k] = v
		}
	}
	return insertIntegration(ctx, tx, im, r, typ, string(t.Direction), kept)
}

func mapIMAPAccount(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	cfg := map[string]any{"host": lstr(r, "host"), "security": "tls",
		"delete_after_process": lbool(r, "delete_after_process", false)}
	if p, ok := lint(r, "port"); ok && p > 0 {
		cfg["port"] = p
	}
	if !lbool(r, "use_ssl", true) {
		cfg["security"] = "none"
	}
	return insertIntegration(ctx, tx, im, r, docflow.IntegrationIMAP, string(docflow.DirectionSource), cfg)
}

func insertIntegration(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow, typ, dir string, cfg map[string]any) (int64, string, error) {
	now := im.db.Now()
	b, err := json.Marshal(cfg)
	if err != nil {
		return 0, "", err
	}
	id, err := insertID(ctx, tx, `INSERT INTO integrations (owner_id, direction, integration_type, name, config, credentials, is_active,
			last_used_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5::jsonb, '', FALSE, $6, $7, $8) RETURNING id`,
		lstr(r, "owner_id"), dir, typ, lstr(r, "name"), string(b), ltime(r, "last_used_at"),
		ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	return id, legacySealed, err
}
