package postgres

import (
	"context"
	"mime"
	"path"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"

	"docflow"
)

// legacyTables are the original's tables docflow takes, in the order they
// are imported: a table comes after those its rows point at. Owner and
// user ids are kept as they are (both services name users alike: the
// e-mail or the sign-in's subject).
func legacyTables() []legacyTable {
	return []legacyTable{
		{name: "local_users", required: []string{"email", "username", "hashed_password"},
			optional: []string{"display_name", "is_active", "is_admin", "created_at", "updated_at"}, mapRow: mapLocalUser},
		{name: "user_profiles", required: []string{"user_id"},
			optional: []string{"display_name", "daily_upload_limit", "notes", "is_blocked", "subscription_tier", "preferred_language", "created_at", "updated_at"},
			mapRow:   mapProfile},
		{name: "pipelines", required: []string{"name"},
			optional: []string{"owner_id", "description", "is_default", "is_active", "created_at", "updated_at"}, mapRow: mapPipeline},
		{name: "pipeline_steps", required: []string{"pipeline_id", "step_type"},
			optional: []string{"position", "label", "config", "enabled"}, mapRow: mapStep},
		{name: "files", required: []string{"filehash", "local_filename", "file_size"},
			optional: []string{"owner_id", "original_filename", "mime_type", "is_duplicate", "duplicate_of_id", "ocr_text",
				"ocr_quality_score", "ai_metadata", "document_title", "pipeline_id", "created_at"}, mapRow: mapFile},
		{name: "processing_logs", required: []string{"file_id"},
			optional: []string{"task_id", "step_name", "status", "message", "timestamp"}, mapRow: mapLog},
		{name: "pipeline_routing_rules", required: []string{"name", "field", "operator", "value", "target_pipeline_id"},
			optional: []string{"owner_id", "position", "is_active", "created_at", "updated_at"}, mapRow: mapRoutingRule},
		{name: "classification_rules", required: []string{"name", "category", "rule_type", "pattern"},
			optional: []string{"owner_id", "priority", "case_sensitive", "enabled", "created_at", "updated_at"}, mapRow: mapClassificationRule},
		{name: "api_tokens", required: []string{"owner_id", "name", "token_hash", "token_prefix"},
			optional: []string{"is_active", "last_used_at", "last_used_ip", "created_at", "revoked_at", "expires_at"}, mapRow: mapToken},
		{name: "saved_searches", required: []string{"user_id", "name", "filters"},
			optional: []string{"created_at", "updated_at"}, mapRow: mapSavedSearch},
		{name: "document_comments", required: []string{"file_id", "user_id", "body"},
			optional: []string{"parent_id", "mentions", "is_resolved", "created_at", "updated_at"}, mapRow: mapComment},
		{name: "document_annotations", required: []string{"file_id", "user_id", "page", "x", "y", "width", "height"},
			optional: []string{"content", "annotation_type", "color", "created_at", "updated_at"}, mapRow: mapAnnotation},
		{name: "file_shares", required: []string{"file_id", "owner_id", "shared_with_user_id", "role"},
			optional: []string{"created_at", "updated_at"}, mapRow: mapShare},
		{name: "webhook_configs", required: []string{"url", "events"},
			optional: []string{"secret", "is_active", "description", "created_at", "updated_at"}, mapRow: mapWebhook},
		{name: "user_integrations", required: []string{"owner_id", "direction", "integration_type", "name"},
			optional: []string{"config", "is_active", "last_used_at", "created_at", "updated_at"}, mapRow: mapIntegration},
		{name: "user_imap_accounts", required: []string{"owner_id", "name", "host"},
			optional: []string{"port", "use_ssl", "delete_after_process", "created_at", "updated_at"}, mapRow: mapIMAPAccount},
	}
}

// insertID runs an INSERT … RETURNING id; 0 when ON CONFLICT took nothing.
func insertID(ctx context.Context, tx pgx.Tx, sql string, args ...any) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, sql, args...).Scan(&id)
	if err == pgx.ErrNoRows {
		return 0, nil
	}
	return id, err
}

func mapLocalUser(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	id, err := insertID(ctx, tx, `INSERT INTO local_users (email, username, display_name, password_hash, is_admin, is_active, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING RETURNING id`,
		strings.TrimSpace(lstr(r, "email")), strings.TrimSpace(lstr(r, "username")), lstr(r, "display_name"), lstr(r, "hashed_password"),
		lbool(r, "is_admin", false), lbool(r, "is_active", false), ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	if err != nil || id != 0 {
		return id, "", err
	}
	return 0, "an account with this e-mail or user name exists in docflow: docflow's was kept", nil
}

// legacyTiers are the original's subscription tiers docflow knows, and
// what its others become.
var legacyTiers = map[string]string{"free": "free", "starter": "starter", "professional": "professional", "business": "power", "power": "power"}

// legacyLanguages are the preferred languages docflow supports.
var legacyLanguages = map[string]bool{"en": true, "de": true, "es": true, "fr": true, "it": true}

func mapProfile(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	var notes []string
	tier := "free"
	if t := strings.ToLower(strings.TrimSpace(lstr(r, "subscription_tier"))); t != "" {
		if m, ok := legacyTiers[t]; ok {
			tier = m
		} else {
			notes = append(notes, "an unknown subscription tier became free")
		}
	}
	var lang *string
	if l := strings.ToLower(strings.TrimSpace(lstr(r, "preferred_language"))); legacyLanguages[l] {
		lang = &l
	}
	var limit *int64
	if n := lintp(r, "daily_upload_limit"); n != nil {
		limit = n
	}
	id, err := insertID(ctx, tx, `INSERT INTO user_profiles (user_id, display_name, daily_upload_limit, notes, is_blocked, subscription_tier,
			preferred_language, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (user_id) DO NOTHING RETURNING id`,
		lstr(r, "user_id"), lstrp(r, "display_name"), limit, lstrp(r, "notes"), lbool(r, "is_blocked", false), tier, lang,
		ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	if err != nil {
		return 0, "", err
	}
	if id == 0 {
		return 0, "this user has a profile in docflow: docflow's was kept", nil
	}
	return id, strings.Join(notes, "; "), nil
}

// legacyMergedPipeline is the reason of a pipeline taken as docflow's own
// pipeline of the same owner and name.
const legacyMergedPipeline = "merged into docflow's pipeline of the same owner and name (its steps were not imported)"

func mapPipeline(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	owner := lstrp(r, "owner_id")
	name := strings.TrimSpace(lstr(r, "name"))
	var existing int64
	err := tx.QueryRow(ctx, `SELECT id FROM pipelines WHERE coalesce(owner_id, '') = coalesce($1, '') AND lower(name) = lower($2)`,
		owner, name).Scan(&existing)
	if err == nil {
		return existing, legacyMergedPipeline, nil
	}
	if err != pgx.ErrNoRows {
		return 0, "", err
	}
	isDefault := lbool(r, "is_default", false)
	note := ""
	if isDefault {
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pipelines WHERE coalesce(owner_id, '') = coalesce($1, '') AND is_default)`,
			owner).Scan(&taken); err != nil {
			return 0, "", err
		}
		if taken {
			isDefault = false
			note = "imported as not the default: docflow's default pipeline stays the default"
		}
	}
	id, err := insertID(ctx, tx, `INSERT INTO pipelines (owner_id, name, description, is_default, is_active, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
		owner, name, lstr(r, "description"), isDefault, lbool(r, "is_active", true), ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	return id, note, err
}

// legacyStepTypes are the original's step types under other names than
// docflow's.
var legacyStepTypes = map[string]string{
	"convert_pdf": docflow.StepConvertToPDF, "pdf_conversion": docflow.StepConvertToPDF,
	"duplicate_check": docflow.StepCheckDuplicates, "deduplicate": docflow.StepCheckDuplicates,
	"extract_text": docflow.StepOCR, "ocr_text": docflow.StepOCR, "process_with_ocr": docflow.StepOCR,
	"metadata_extraction": docflow.StepExtractMetadata, "extract_metadata_with_gpt": docflow.StepExtractMetadata,
	"classification": docflow.StepClassify, "classify_document": docflow.StepClassify,
	"embed_metadata_into_pdf": docflow.StepEmbedMetadata,
	"embedding":               docflow.StepComputeEmbedding, "embeddings": docflow.StepComputeEmbedding,
	"send_to_all_destinations": docflow.StepSendToDestinations, "upload": docflow.StepSendToDestinations,
	"finalize_document_storage": docflow.StepSendToDestinations,
}

func mapStep(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	src, _ := lint(r, "pipeline_id")
	pipeline, reason, err := im.lookup(ctx, tx, "pipelines", src)
	if err != nil {
		return 0, "", err
	}
	if pipeline == 0 {
		return 0, "its pipeline was not imported", nil
	}
	if reason == legacyMergedPipeline {
		return 0, "its pipeline was merged into docflow's of the same name", nil
	}
	typ := strings.ToLower(strings.TrimSpace(lstr(r, "step_type")))
	if m, ok := legacyStepTypes[typ]; ok {
		typ = m
	}
	info, ok := docflow.StepCatalogue()[typ]
	if !ok {
		return 0, "a step type docflow does not have", nil
	}
	var position int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM pipeline_steps WHERE pipeline_id = $1`, pipeline).Scan(&position); err != nil {
		return 0, "", err
	}
	if position >= docflow.MaxPipelineSteps {
		return 0, "its pipeline has the most steps docflow allows", nil
	}
	cfg, ok := ljsonObject(r, "config")
	note := ""
	if !ok {
		note = "its config was not JSON and was dropped"
	}
	kept := map[string]any{}
	for k, v := range cfg {
		if _, known := info.ConfigSchema[k]; known {
			kept[k] = v
		} else if note == "" {
			note = "config keys docflow does not know were dropped"
		}
	}
	id, err := insertID(ctx, tx, `INSERT INTO pipeline_steps (pipeline_id, position, step_type, label, enabled, config)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, pipeline, position, typ, lstr(r, "label"), lbool(r, "enabled", true), kept)
	return id, note, err
}

// legacyStoredName is the shape of a stored name docflow gives
// (<uuid>.<ext>).
var legacyStoredName = regexp.MustCompile(`^[0-9a-fA-F-]{36}\.[A-Za-z0-9]{1,10}$`)

func mapFile(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	hash := strings.ToLower(strings.TrimSpace(lstr(r, "filehash")))
	local := lstr(r, "local_filename")
	name := docflow.CleanFilename(lstr(r, "original_filename"))
	if name == "" {
		name = docflow.CleanFilename(path.Base(local))
	}
	if name == "" {
		name = "document"
	}
	stored := path.Base(local)
	if !legacyStoredName.MatchString(stored) {
		stored = ""
	}
	mt := strings.TrimSpace(lstr(r, "mime_type"))
	if !strings.Contains(mt, "/") {
		mt = mime.TypeByExtension(strings.ToLower(path.Ext(name)))
		if i := strings.IndexByte(mt, ';'); i >= 0 {
			mt = mt[:i]
		}
		if mt == "" {
			mt = "application/octet-stream"
		}
	}
	size, _ := lint(r, "file_size")
	// The content comes after the records (the wizard's contents pass,
	// legacy_contents.go), from the original's work folder.
	var notes []string
	meta, ok := ljsonObject(r, "ai_metadata")
	if !ok {
		notes = append(notes, "its AI metadata was not JSON and was dropped")
	}
	var pipeline *int64
	if src, ok := lint(r, "pipeline_id"); ok {
		if p, _, err := im.lookup(ctx, tx, "pipelines", src); err != nil {
			return 0, "", err
		} else if p != 0 {
			pipeline = &p
		}
	}
	status := docflow.StatusCompleted
	var dupOf *int64
	if lbool(r, "is_duplicate", false) {
		status = docflow.StatusDuplicate
		if src, ok := lint(r, "duplicate_of_id"); ok {
			if d, _, err := im.lookup(ctx, tx, "files", src); err != nil {
				return 0, "", err
			} else if d != 0 {
				dupOf = &d
			}
		}
	}
	if dupOf == nil {
		// docflow keeps one original per content: an import of content it
		// has already is that original's duplicate.
		var orig int64
		err := tx.QueryRow(ctx, `SELECT id FROM files WHERE filehash = $1 AND status <> 'duplicate' AND duplicate_of IS NULL`, hash).Scan(&orig)
		switch {
		case err == nil:
			if status != docflow.StatusDuplicate {
				notes = append(notes, "docflow has this content already: imported as its duplicate")
			}
			status, dupOf = docflow.StatusDuplicate, &orig
		case err != pgx.ErrNoRows:
			return 0, "", err
		default:
			status = docflow.StatusCompleted
		}
	}
	var quality *float64
	if q, ok := lfloat(r, "ocr_quality_score"); ok {
		quality = &q
	}
	created := ltimeOr(r, "created_at", now)
	id, err := insertID(ctx, tx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, owner_id,
			pipeline_id, status, source, duplicate_of, document_title, ocr_text, ocr_quality_score, ai_metadata, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'import', $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
		hash, name, stored, size, mt, lstrp(r, "owner_id"), pipeline, status, dupOf, lstrp(r, "document_title"),
		lstr(r, "ocr_text"), quality, meta, created, now)
	if err != nil {
		return 0, "", err
	}
	if status == docflow.StatusCompleted {
		// Completed documents are indexed for search, as a changed one is.
		if _, err := tx.Exec(ctx, `SELECT docflow_file_event('file.updated', $1, $2)`, id, lstrp(r, "owner_id")); err != nil {
			return 0, "", err
		}
	}
	return id, strings.Join(notes, "; "), nil
}

// legacyLogStatuses are the original's log statuses under docflow's names.
var legacyLogStatuses = map[string]string{"success": docflow.StepSucceeded, "failure": docflow.StepFailed,
	"in_progress": docflow.StepRunning, "pending": docflow.StepQueued}

func mapLog(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	src, ok := lint(r, "file_id")
	if !ok {
		return 0, "not about a file (docflow keeps a log per file)", nil
	}
	file, _, err := im.lookup(ctx, tx, "files", src)
	if err != nil || file == 0 {
		return 0, "its file was not imported", err
	}
	status := strings.ToLower(lstr(r, "status"))
	if m, ok := legacyLogStatuses[status]; ok {
		status = m
	}
	id, err := insertID(ctx, tx, `INSERT INTO processing_logs (file_id, task_id, step_name, status, message, timestamp)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`, file, lstr(r, "task_id"), lstr(r, "step_name"), status,
		lstr(r, "message"), ltimeOr(r, "timestamp", im.db.Now()))
	return id, "", err
}

func mapRoutingRule(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	src, _ := lint(r, "target_pipeline_id")
	target, _, err := im.lookup(ctx, tx, "pipelines", src)
	if err != nil || target == 0 {
		return 0, "its target pipeline was not imported", err
	}
	pos, _ := lint(r, "position")
	rule := &docflow.RoutingRule{OwnerID: lstrp(r, "owner_id"), Name: strings.TrimSpace(lstr(r, "name")), Position: int(max(pos, 0)),
		Field: lstr(r, "field"), Operator: lstr(r, "operator"), Value: lstr(r, "value"), TargetPipelineID: target,
		IsActive: lbool(r, "is_active", true)}
	if err := docflow.ValidateRoutingRule(rule); err != nil {
		return 0, "docflow refuses the rule: " + docflow.ErrorMessage(err), nil
	}
	id, err := insertID(ctx, tx, `INSERT INTO routing_rules (owner_id, name, position, field, operator, value, target_pipeline_id, is_active,
			created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
		rule.OwnerID, rule.Name, rule.Position, rule.Field, rule.Operator, rule.Value, rule.TargetPipelineID, rule.IsActive,
		ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	return id, "", err
}

func mapClassificationRule(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	prio, _ := lint(r, "priority")
	rule := &docflow.ClassificationRule{OwnerID: lstrp(r, "owner_id"), Name: strings.TrimSpace(lstr(r, "name")),
		Category: lstr(r, "category"), RuleType: lstr(r, "rule_type"), Pattern: lstr(r, "pattern"), Priority: int(prio),
		CaseSensitive: lbool(r, "case_sensitive", false), Enabled: lbool(r, "enabled", true)}
	if err := docflow.CheckClassificationRule(rule); err != nil {
		return 0, "docflow refuses the rule: " + docflow.ErrorMessage(err), nil
	}
	id, err := insertID(ctx, tx, `INSERT INTO classification_rules (owner_id, name, category, rule_type, pattern, priority, case_sensitive,
			enabled, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING id`,
		rule.OwnerID, rule.Name, rule.Category, rule.RuleType, rule.Pattern, rule.Priority, rule.CaseSensitive, rule.Enabled,
		ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	if err == nil && id == 0 {
		return 0, "docflow has a rule of this name for this owner: docflow's was kept", nil
	}
	return id, "", err
}

// legacyTokenHash is a token's stored hash: the hex SHA-256 both
// services keep.
var legacyTokenHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func mapToken(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	hash := strings.ToLower(strings.TrimSpace(lstr(r, "token_hash")))
	if !legacyTokenHash.MatchString(hash) {
		return 0, "its hash is not a SHA-256", nil
	}
	active := lbool(r, "is_active", true)
	revoked := ltime(r, "revoked_at")
	id, err := insertID(ctx, tx, `INSERT INTO api_tokens (owner_id, name, token_prefix, token_hash, is_active, last_used_at, last_used_ip,
			created_at, revoked_at, expires_at, last_revoked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $9) ON CONFLICT (token_hash) DO NOTHING RETURNING id`,
		lstr(r, "owner_id"), lstr(r, "name"), lstr(r, "token_prefix"), hash, active, ltime(r, "last_used_at"), lstrp(r, "last_used_ip"),
		ltimeOr(r, "created_at", im.db.Now()), revoked, ltime(r, "expires_at"))
	if err == nil && id == 0 {
		return 0, "docflow has this token already", nil
	}
	return id, "", err
}

func mapSavedSearch(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	filters, ok := ljsonObject(r, "filters")
	if !ok {
		return 0, "its filters are not JSON", nil
	}
	kept := map[string]any{}
	note := ""
	for k, v := range filters {
		known := false
		for _, key := range docflow.SavedSearchFilterKeys {
			known = known || key == k
		}
		if known && v != nil {
			kept[k] = v
		} else if v != nil && note == "" {
			note = "filters docflow does not know were dropped"
		}
	}
	id, err := insertID(ctx, tx, `INSERT INTO saved_searches (owner_id, name, filters, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (owner_id, name) DO NOTHING RETURNING id`,
		lstr(r, "user_id"), lstr(r, "name"), kept, ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	if err == nil && id == 0 {
		return 0, "docflow has a saved search of this name for this user: docflow's was kept", nil
	}
	return id, note, err
}

func mapComment(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	src, _ := lint(r, "file_id")
	file, _, err := im.lookup(ctx, tx, "files", src)
	if err != nil || file == 0 {
		return 0, "its file was not imported", err
	}
	body := lstr(r, "body")
	if err := docflow.CheckCommentBody(body); err != nil {
		return 0, "docflow refuses the comment: " + docflow.ErrorMessage(err), nil
	}
	note := ""
	var parent *int64
	if ps, ok := lint(r, "parent_id"); ok {
		p, _, err := im.lookup(ctx, tx, "document_comments", ps)
		if err != nil {
			return 0, "", err
		}
		if p != 0 {
			parent = &p
		} else {
			note = "the comment it answered was not imported: imported as a comment of its own"
		}
	}
	mentions, ok := ljsonStrings(r, "mentions")
	if !ok {
		mentions = docflow.ExtractMentions(body)
	}
	id, err := insertID(ctx, tx, `INSERT INTO comments (file_id, user_id, parent_id, body, mentions, is_resolved, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, file, lstr(r, "user_id"), parent, body, mentions,
		lbool(r, "is_resolved", false), ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	return id, note, err
}

// legacyAnnotationTypes are the annotation types docflow has.
var legacyAnnotationTypes = map[string]bool{"note": true, "highlight": true, "underline": true, "strikethrough": true}

var legacyColour = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)

func mapAnnotation(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	src, _ := lint(r, "file_id")
	file, _, err := im.lookup(ctx, tx, "files", src)
	if err != nil || file == 0 {
		return 0, "its file was not imported", err
	}
	var box [4]float64
	scale := 1.0
	for i, c := range []string{"x", "y", "width", "height"} {
		v, ok := lfloat(r, c)
		if !ok || v < 0 {
			return 0, "its position is not a number docflow can place", nil
		}
		box[i] = v
		if v > 1 {
			scale = 100
		}
	}
	notes := []string{}
	if scale > 1 {
		// Percentages of the page, the only other unit a box within a page
		// can have without the page's size.
		for i := range box {
			box[i] /= scale
			if box[i] > 1 {
				return 0, "its position is not within the page (docflow keeps fractions of the page)", nil
			}
		}
		notes = append(notes, "its position was in percent of the page and became fractions")
	}
	page, _ := lint(r, "page")
	if page < 1 {
		page = 1
	}
	typ := strings.ToLower(lstr(r, "annotation_type"))
	if !legacyAnnotationTypes[typ] {
		if typ != "" {
			notes = append(notes, "an annotation type docflow does not have became a note")
		}
		typ = "note"
	}
	colour := lstr(r, "color")
	if !legacyColour.MatchString(colour) {
		colour = "#ffff00"
	}
	id, err := insertID(ctx, tx, `INSERT INTO annotations (file_id, user_id, page, x, y, width, height, content, annotation_type, color,
			created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
		file, lstr(r, "user_id"), page, box[0], box[1], box[2], box[3], lstr(r, "content"), typ, strings.ToLower(colour),
		ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	return id, strings.Join(notes, "; "), err
}

func mapShare(ctx context.Context, tx pgx.Tx, im *legacyImporter, r docflow.LegacyRow) (int64, string, error) {
	now := im.db.Now()
	src, _ := lint(r, "file_id")
	file, _, err := im.lookup(ctx, tx, "files", src)
	if err != nil || file == 0 {
		return 0, "its file was not imported", err
	}
	role := strings.ToLower(lstr(r, "role"))
	if role != "viewer" && role != "editor" {
		return 0, "a share role docflow does not have", nil
	}
	owner, with := lstr(r, "owner_id"), lstr(r, "shared_with_user_id")
	if owner == with {
		return 0, "a share with its own owner", nil
	}
	id, err := insertID(ctx, tx, `INSERT INTO shares (file_id, owner_id, shared_with_user_id, role, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (file_id, shared_with_user_id) DO NOTHING RETURNING id`,
		file, owner, with, role, ltimeOr(r, "created_at", now), ltimeOr(r, "updated_at", now))
	if err == nil && id == 0 {
		return 0, "docflow shares this file with this user already", nil
	}
	return id, "", err
}
