// Package legacytest builds databases in the original service's schema
// for the import's tests: the schema written out as DDL from reading the
// original's models (SQLite, as the original creates by default, or
// PostgreSQL), a small set of rows touching every table the import
// takes and some it leaves, and the original's work folder with the
// contents those rows record (files.go).
package legacytest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// Dialects of Schema.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// AliceToken is an API token the original issued to alice: its SHA-256 is
// in api_tokens, so after an import docflow accepts it.
const AliceToken = "de_aliceToken1234567890abcdefghijklmnopqrstuvw"

// AlicePassword is alice's local password (bcrypt in local_users).
const AlicePassword = "correct horse battery"

// TokenHash is the hex SHA-256 both services store for a token.
func TokenHash(token string) string {
	s := sha256.Sum256([]byte(token))
	return hex.EncodeToString(s[:])
}

// schema is the original's tables, with {ts} for its timezone-aware
// DateTime, {float} for Float and {bool} for Boolean.
var schema = []string{
	`CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)`,
	`CREATE TABLE documents (id INTEGER PRIMARY KEY, filename VARCHAR UNIQUE, sender VARCHAR, recipient VARCHAR, tags VARCHAR, summary VARCHAR)`,
	`CREATE TABLE pipelines (id INTEGER PRIMARY KEY, owner_id VARCHAR, name VARCHAR(255) NOT NULL, description TEXT,
		is_default {bool} NOT NULL, is_active {bool} NOT NULL, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE pipeline_steps (id INTEGER PRIMARY KEY, pipeline_id INTEGER NOT NULL REFERENCES pipelines(id), position INTEGER NOT NULL,
		step_type VARCHAR(100) NOT NULL, label VARCHAR(255), config TEXT, enabled {bool} NOT NULL, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE files (id INTEGER PRIMARY KEY, owner_id VARCHAR, filehash VARCHAR NOT NULL, original_filename VARCHAR,
		local_filename VARCHAR NOT NULL, original_file_path VARCHAR, processed_file_path VARCHAR, file_size INTEGER NOT NULL,
		mime_type VARCHAR, is_duplicate {bool} NOT NULL, duplicate_of_id INTEGER REFERENCES files(id), ocr_text TEXT,
		ocr_quality_score INTEGER, ai_metadata TEXT, document_title VARCHAR, original_pdfa_path VARCHAR, processed_pdfa_path VARCHAR,
		embedding TEXT, pipeline_id INTEGER REFERENCES pipelines(id), created_at {ts})`,
	`CREATE TABLE file_processing_steps (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL REFERENCES files(id), step_name VARCHAR NOT NULL,
		status VARCHAR NOT NULL, started_at {ts}, completed_at {ts}, error_message TEXT, created_at {ts}, updated_at {ts},
		CONSTRAINT unique_file_step UNIQUE (file_id, step_name))`,
	`CREATE TABLE processing_logs (id INTEGER PRIMARY KEY, file_id INTEGER REFERENCES files(id), task_id VARCHAR, step_name VARCHAR,
		status VARCHAR, message VARCHAR, detail TEXT, timestamp {ts})`,
	`CREATE TABLE application_settings (id INTEGER PRIMARY KEY, key VARCHAR NOT NULL UNIQUE, value VARCHAR, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE saved_searches (id INTEGER PRIMARY KEY, user_id VARCHAR NOT NULL, name VARCHAR NOT NULL, filters TEXT NOT NULL,
		pinned {bool} NOT NULL DEFAULT FALSE, created_at {ts}, updated_at {ts}, CONSTRAINT unique_user_search_name UNIQUE (user_id, name))`,
	`CREATE TABLE webhook_configs (id INTEGER PRIMARY KEY, url VARCHAR NOT NULL, secret VARCHAR, events TEXT NOT NULL,
		is_active {bool} NOT NULL, description VARCHAR, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE local_users (id INTEGER PRIMARY KEY, email VARCHAR(255) NOT NULL UNIQUE, username VARCHAR(64) NOT NULL UNIQUE,
		display_name VARCHAR(255), hashed_password VARCHAR(255) NOT NULL, is_active {bool} NOT NULL, is_admin {bool} NOT NULL,
		email_verification_token VARCHAR(128), email_verification_sent_at {ts}, password_reset_token VARCHAR(128),
		password_reset_sent_at {ts}, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE user_profiles (id INTEGER PRIMARY KEY, user_id VARCHAR NOT NULL UNIQUE, display_name VARCHAR, daily_upload_limit INTEGER,
		notes TEXT, is_blocked {bool} NOT NULL, subscription_tier VARCHAR(50), subscription_billing_cycle VARCHAR(10) NOT NULL DEFAULT 'monthly',
		subscription_period_start {ts}, allow_overage {bool} NOT NULL DEFAULT FALSE, onboarding_completed {bool} NOT NULL DEFAULT FALSE,
		onboarding_completed_at {ts}, contact_email VARCHAR(255), preferred_destination VARCHAR(50), stripe_customer_id VARCHAR(64),
		preferred_language VARCHAR(10), created_at {ts}, updated_at {ts})`,
	`CREATE TABLE subscription_plans (id INTEGER PRIMARY KEY, plan_id VARCHAR(50) NOT NULL UNIQUE, name VARCHAR(100) NOT NULL,
		price_monthly {float} NOT NULL, price_yearly {float} NOT NULL, is_active {bool} NOT NULL, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE user_imap_accounts (id INTEGER PRIMARY KEY, owner_id VARCHAR NOT NULL, name VARCHAR(255) NOT NULL, host VARCHAR(255) NOT NULL,
		port INTEGER NOT NULL DEFAULT 993, username VARCHAR(255) NOT NULL, password VARCHAR(1024) NOT NULL, use_ssl {bool} NOT NULL,
		delete_after_process {bool} NOT NULL, is_active {bool} NOT NULL, last_checked_at {ts}, last_error TEXT, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE user_integrations (id INTEGER PRIMARY KEY, owner_id VARCHAR NOT NULL, direction VARCHAR(20) NOT NULL,
		integration_type VARCHAR(50) NOT NULL, name VARCHAR(255) NOT NULL, config TEXT, credentials TEXT, is_active {bool} NOT NULL,
		last_used_at {ts}, last_error TEXT, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE api_tokens (id INTEGER PRIMARY KEY, owner_id VARCHAR NOT NULL, name VARCHAR(255) NOT NULL, token_hash VARCHAR(64) NOT NULL UNIQUE,
		token_prefix VARCHAR(16) NOT NULL, last_used_at {ts}, last_used_ip VARCHAR(45), is_active {bool} NOT NULL, created_at {ts},
		revoked_at {ts}, expires_at {ts})`,
	`CREATE TABLE pipeline_routing_rules (id INTEGER PRIMARY KEY, owner_id VARCHAR, name VARCHAR(255) NOT NULL, position INTEGER NOT NULL,
		field VARCHAR(255) NOT NULL, operator VARCHAR(50) NOT NULL, value VARCHAR(1024) NOT NULL,
		target_pipeline_id INTEGER NOT NULL REFERENCES pipelines(id), is_active {bool} NOT NULL, created_at {ts}, updated_at {ts})`,
	`CREATE TABLE classification_rules (id INTEGER PRIMARY KEY, owner_id VARCHAR, name VARCHAR(255) NOT NULL, category VARCHAR(100) NOT NULL,
		rule_type VARCHAR(50) NOT NULL, pattern VARCHAR(1000) NOT NULL, priority INTEGER NOT NULL, case_sensitive {bool} NOT NULL,
		enabled {bool} NOT NULL, created_at {ts}, updated_at {ts}, CONSTRAINT uq_classification_rules_owner_name UNIQUE (owner_id, name))`,
	`CREATE TABLE document_comments (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL REFERENCES files(id), user_id VARCHAR NOT NULL,
		parent_id INTEGER REFERENCES document_comments(id), body TEXT NOT NULL, mentions TEXT, is_resolved {bool} NOT NULL,
		created_at {ts}, updated_at {ts})`,
	`CREATE TABLE document_annotations (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL REFERENCES files(id), user_id VARCHAR NOT NULL,
		page INTEGER NOT NULL, x {float} NOT NULL, y {float} NOT NULL, width {float} NOT NULL, height {float} NOT NULL, content TEXT NOT NULL,
		annotation_type VARCHAR(50) NOT NULL, color VARCHAR(20), created_at {ts}, updated_at {ts})`,
	`CREATE TABLE file_shares (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL REFERENCES files(id), owner_id VARCHAR NOT NULL,
		shared_with_user_id VARCHAR NOT NULL, role VARCHAR(20) NOT NULL, created_at {ts}, updated_at {ts},
		CONSTRAINT uq_file_share_file_user UNIQUE (file_id, shared_with_user_id))`,
}

// Schema returns the original's DDL for dialect.
func Schema(dialect string) []string {
	ts, float := "DATETIME", "FLOAT"
	if dialect == Postgres {
		ts, float = "TIMESTAMP WITH TIME ZONE", "DOUBLE PRECISION"
	}
	r := strings.NewReplacer("{ts}", ts, "{float}", float, "{bool}", "BOOLEAN")
	out := make([]string, len(schema))
	for i, s := range schema {
		out[i] = r.Replace(s)
	}
	return out
}

// Exec runs one statement; ? marks the arguments.
type Exec func(ctx context.Context, query string, args ...any) error

// at is a time as the original writes it into SQLite (SQLAlchemy's text
// form; PostgreSQL takes it as well).
const at = "2025-03-01 10:00:00.000000"

// Seed writes the test rows through exec. Rows counted by the tests:
// 2 local users, 2 profiles, 2 pipelines (the system one meets docflow's
// default), 3 steps (one of a type docflow lacks), 5 files (one a
// duplicate; their contents are WriteWorkFolder's), 3 logs (one about no file), 1 routing rule, 1 classification
// rule, 2 tokens (one revoked), 1 saved search, 2 comments (a reply), 1
// annotation, 1 share, 2 webhooks (one with no event docflow delivers), 1
// integration, 1 IMAP account, 2 settings and 1 plan (not imported).
func Seed(ctx context.Context, exec Exec) error {
	pw, err := bcrypt.GenerateFromPassword([]byte(AlicePassword), bcrypt.MinCost)
	if err != nil {
		return err
	}
	hashA := Hash(InvoicePDF)
	hashB := Hash(LetterText)
	hashC := strings.Repeat("c", 64)
	hashD := strings.Repeat("d", 64)
	rows := []struct {
		q    string
		args []any
	}{
		{`INSERT INTO alembic_version VALUES (?)`, []any{"064_scope_automation_hooks"}},
		{`INSERT INTO local_users (id, email, username, display_name, hashed_password, is_active, is_admin, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, "alice@example.com", "alice", "Alice", string(pw), true, false, at, at}},
		{`INSERT INTO local_users (id, email, username, display_name, hashed_password, is_active, is_admin, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{2, "bob@example.com", "bob", nil, string(pw), true, true, at, at}},
		{`INSERT INTO user_profiles (id, user_id, display_name, daily_upload_limit, notes, is_blocked, subscription_tier, preferred_language, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, "alice@example.com", "Alice A.", 10, "VIP", false, "business", "de", at, at}},
		{`INSERT INTO user_profiles (id, user_id, display_name, daily_upload_limit, notes, is_blocked, subscription_tier, preferred_language, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{2, "bob@example.com", nil, nil, nil, true, nil, "xx", at, at}},
		{`INSERT INTO pipelines (id, owner_id, name, description, is_default, is_active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, nil, "Old default", "the original's system pipeline", true, true, at, at}},
		{`INSERT INTO pipelines (id, owner_id, name, description, is_default, is_active, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{2, "alice@example.com", "Invoices", nil, true, true, at, at}},
		{`INSERT INTO pipeline_steps (id, pipeline_id, position, step_type, label, config, enabled) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, 2, 0, "ocr", "OCR", `{"ocr_language": "deu", "engine": "x"}`, true}},
		{`INSERT INTO pipeline_steps (id, pipeline_id, position, step_type, label, config, enabled) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{2, 2, 1, "extract_metadata_with_gpt", nil, nil, true}},
		{`INSERT INTO pipeline_steps (id, pipeline_id, position, step_type, label, config, enabled) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{3, 2, 2, "translate_document", nil, `{}`, true}},
		{`INSERT INTO files (id, owner_id, filehash, original_filename, local_filename, original_file_path, processed_file_path, file_size,
			mime_type, is_duplicate, ocr_text, ocr_quality_score, ai_metadata, document_title, pipeline_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, "alice@example.com", hashA, "invoice.pdf", "/workdir/tmp/0b6c2f2e-8a53-4c3e-9d38-4f3f8d1c2a10.pdf", InvoiceOriginalPath,
				InvoiceProcessedPath, len(InvoicePDF), "application/pdf", false, "Invoice 42 from ACME", 91,
				`{"tags": ["invoice", "acme"], "document_type": "Invoice"}`, "ACME invoice", 2, at}},
		{`INSERT INTO files (id, owner_id, filehash, original_filename, local_filename, original_file_path, file_size, mime_type, is_duplicate,
			ocr_text, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{2, "bob@example.com", hashB, "letter.txt",
			"/workdir/tmp/letter.txt", LetterOriginalPath, len(LetterText), nil, false, string(LetterText), at}},
		{`INSERT INTO files (id, owner_id, filehash, original_filename, local_filename, file_size, mime_type, is_duplicate, duplicate_of_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{3, "alice@example.com", hashA, "invoice copy.pdf", "/workdir/tmp/x.pdf", len(InvoicePDF),
			"application/pdf", true, 1, at}},
		{`INSERT INTO files (id, owner_id, filehash, original_filename, local_filename, original_file_path, file_size, mime_type, is_duplicate,
			ai_metadata, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{4, nil, hashC, "scan.png", "/workdir/tmp/scan.png",
			ScanOriginalPath, 5, "image/png", false, "not json", at}},
		{`INSERT INTO files (id, owner_id, filehash, original_filename, local_filename, original_file_path, processed_file_path, file_size,
			mime_type, is_duplicate, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{5, "bob@example.com", hashD, "notes.txt",
			OutsidePath, TraversalPath, SiblingPath, 10, "text/plain", false, at}},
		{`INSERT INTO file_processing_steps (id, file_id, step_name, status) VALUES (?, ?, ?, ?)`, []any{1, 1, "ocr", "success"}},
		{`INSERT INTO processing_logs (id, file_id, task_id, step_name, status, message, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, 1, "task-1", "ocr", "success", "OCR done", at}},
		{`INSERT INTO processing_logs (id, file_id, task_id, step_name, status, message, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{2, 1, "task-1", "extract_metadata", "failure", nil, at}},
		{`INSERT INTO processing_logs (id, file_id, task_id, step_name, status, message, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{3, nil, nil, "startup", "success", "worker ready", at}},
		{`INSERT INTO pipeline_routing_rules (id, owner_id, name, position, field, operator, value, target_pipeline_id, is_active, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, "alice@example.com", "Invoices go", 0, "document_type", "equals", "Invoice", 2, true, at, at}},
		{`INSERT INTO classification_rules (id, owner_id, name, category, rule_type, pattern, priority, case_sensitive, enabled, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, "alice@example.com", "ACME", "invoice", "content_keyword", "acme|rechnung", 5, false, true, at, at}},
		{`INSERT INTO api_tokens (id, owner_id, name, token_hash, token_prefix, is_active, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, "alice@example.com", "scanner", TokenHash(AliceToken), AliceToken[:12], true, at}},
		{`INSERT INTO api_tokens (id, owner_id, name, token_hash, token_prefix, is_active, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{2, "alice@example.com", "old", TokenHash("de_revoked"), "de_revoked", false, at, at}},
		{`INSERT INTO saved_searches (id, user_id, name, filters, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{1, "alice@example.com", "Invoices", `{"q": "invoice", "mime_type": "application/pdf", "pinned_color": "red"}`, at, at}},
		{`INSERT INTO document_comments (id, file_id, user_id, parent_id, body, mentions, is_resolved, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, 1, "alice@example.com", nil, "Please check @bob@example.com", `["bob@example.com"]`, false, at, at}},
		{`INSERT INTO document_comments (id, file_id, user_id, parent_id, body, mentions, is_resolved, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{2, 1, "bob@example.com", 1, "Checked.", nil, true, at, at}},
		{`INSERT INTO document_annotations (id, file_id, user_id, page, x, y, width, height, content, annotation_type, color, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, 1, "alice@example.com", 1, 10.0, 20.0, 30.0, 5.0, "total", "highlight", "#FF0000", at, at}},
		{`INSERT INTO file_shares (id, file_id, owner_id, shared_with_user_id, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, 1, "alice@example.com", "bob@example.com", "viewer", at, at}},
		{`INSERT INTO webhook_configs (id, url, secret, events, is_active, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{1, "https://hooks.example.com/in", "s3cret", `["document.processed", "document.exported"]`, true, "ERP", at, at}},
		{`INSERT INTO webhook_configs (id, url, secret, events, is_active, description, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			[]any{2, "https://hooks.example.com/other", nil, `["document.exported"]`, true, nil, at, at}},
		{`INSERT INTO user_integrations (id, owner_id, direction, integration_type, name, config, credentials, is_active, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, "alice@example.com", "DESTINATION", "s3", "Archive",
			`{"bucket": "docs", "region": "eu-central-1", "storage_class": "GLACIER"}`, "gAAAAABsealed", true, at, at}},
		{`INSERT INTO user_imap_accounts (id, owner_id, name, host, port, username, password, use_ssl, delete_after_process, is_active, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, []any{1, "alice@example.com", "Inbox", "imap.example.com", 993, "alice", "gAAAAABsealed", true, false, true, at, at}},
		{`INSERT INTO application_settings (id, key, value) VALUES (?, ?, ?)`, []any{1, "openai_model", "gpt-4o"}},
		{`INSERT INTO application_settings (id, key, value) VALUES (?, ?, ?)`, []any{2, "workdir", "/workdir"}},
		{`INSERT INTO subscription_plans (id, plan_id, name, price_monthly, price_yearly, is_active) VALUES (?, ?, ?, ?, ?, ?)`,
			[]any{1, "free", "Free", 0.0, 0.0, true}},
	}
	for _, r := range rows {
		if err := exec(ctx, r.q, r.args...); err != nil {
			return fmt.Errorf("seed: %s: %w", strings.Fields(r.q)[2], err)
		}
	}
	return nil
}

// Build writes a SQLite file at path in the original's schema, with the
// rows of Seed.
func Build(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	for _, s := range Schema(SQLite) {
		if err := exec(ctx, s); err != nil {
			return fmt.Errorf("schema: %w", err)
		}
	}
	return Seed(ctx, exec)
}

// Dollar rewrites ? placeholders as $1, $2… for PostgreSQL.
func Dollar(q string) string {
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}
