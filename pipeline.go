package docflow

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Step types of the catalogue, in the order of the standard pipeline.
const (
	StepConvertToPDF       = "convert_to_pdf"
	StepCheckDuplicates    = "check_duplicates"
	StepOCR                = "ocr"
	StepExtractMetadata    = "extract_metadata"
	StepClassify           = "classify"
	StepEmbedMetadata      = "embed_metadata"
	StepComputeEmbedding   = "compute_embedding"
	StepSendToDestinations = "send_to_destinations"
)

// StandardSteps is the step order of the seeded "Standard Processing Pipeline".
var StandardSteps = []string{
	StepConvertToPDF, StepCheckDuplicates, StepOCR, StepExtractMetadata,
	StepClassify, StepEmbedMetadata, StepComputeEmbedding, StepSendToDestinations,
}

// StandardPipelineName names the seeded system default pipeline.
const StandardPipelineName = "Standard Processing Pipeline"

// MaxPipelineSteps caps the steps of one pipeline.
const MaxPipelineSteps = 50

// Pipeline is an ordered list of steps. OwnerID nil = system pipeline.
type Pipeline struct {
	ID          int64           `json:"id"`
	OwnerID     *string         `json:"owner_id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	IsDefault   bool            `json:"is_default"`
	IsActive    bool            `json:"is_active"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	Steps       []*PipelineStep `json:"steps"`
}

// MarshalJSON writes a pipeline without steps with "steps": [], never null
// or missing.
func (p Pipeline) MarshalJSON() ([]byte, error) {
	type plain Pipeline
	if p.Steps == nil {
		p.Steps = []*PipelineStep{}
	}
	return json.Marshal(plain(p))
}

// PipelineStep is one step of a pipeline.
type PipelineStep struct {
	ID         int64          `json:"id"`
	PipelineID int64          `json:"pipeline_id"`
	Position   int            `json:"position"`
	StepType   string         `json:"step_type"`
	Label      string         `json:"label"`
	Enabled    bool           `json:"enabled"`
	Config     map[string]any `json:"config"`
}

// Step run states (one row per step of a run).
const (
	StepQueued    = "queued"
	StepRunning   = "running"
	StepSucceeded = "completed"
	StepSkipped   = "skipped"
	StepFailed    = "failed"
	StepRetrying  = "retrying"
)

// Routing rule operators and builtin fields.
var (
	RoutingOperators     = []string{"contains", "equals", "gt", "gte", "lt", "lte", "not_contains", "not_equals", "regex"}
	RoutingBuiltinFields = []string{"category", "document_type", "file_type", "filename", "size"}
)

// MaxRoutingValueLength bounds a routing rule's value in characters, as
// classification rules bound their patterns: a long regex costs CPU on
// every document routed.
const MaxRoutingValueLength = 2000

// RoutingMetadataPrefix addresses AI metadata fields in routing rules.
const RoutingMetadataPrefix = "metadata."

// RoutingRule sends matching files to a pipeline. OwnerID nil = system-wide.
type RoutingRule struct {
	ID               int64     `json:"id"`
	OwnerID          *string   `json:"owner_id"`
	Name             string    `json:"name"`
	Position         int       `json:"position"`
	Field            string    `json:"field"`
	Operator         string    `json:"operator"`
	Value            string    `json:"value"`
	TargetPipelineID int64     `json:"target_pipeline_id"`
	IsActive         bool      `json:"is_active"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// Classification rule types.
const (
	RuleFilenamePattern = "filename_pattern"
	RuleContentKeyword  = "content_keyword"
	RuleMetadataMatch   = "metadata_match"
)

// ClassificationCategories maps the built-in category keys to labels.
var ClassificationCategories = map[string]string{
	"invoice": "Invoice", "contract": "Contract", "receipt": "Receipt",
	"letter": "Letter", "report": "Report", "bank_statement": "Bank Statement",
	"tax_document": "Tax Document", "insurance": "Insurance Document",
	"payslip": "Payslip", "unknown": "Unknown",
}

// ClassificationRule is a user's (or the system's, OwnerID nil) rule.
type ClassificationRule struct {
	ID            int64     `json:"id"`
	OwnerID       *string   `json:"owner_id"`
	Name          string    `json:"name"`
	Category      string    `json:"category"`
	RuleType      string    `json:"rule_type"`
	Pattern       string    `json:"pattern"`
	Priority      int       `json:"priority"`
	CaseSensitive bool      `json:"case_sensitive"`
	Enabled       bool      `json:"enabled"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Classification is the result of the classify step, stored in AI metadata
// under "classification".
type Classification struct {
	Category     string   `json:"category"`
	Label        string   `json:"label"`
	Confidence   int      `json:"confidence"`
	MatchedRules []string `json:"matched_rules"`
}

// PipelineStore stores pipelines and their steps.
type PipelineStore interface {
	// FindPipelineByID returns the pipeline with its steps, or ENOTFOUND.
	FindPipelineByID(ctx context.Context, id int64) (*Pipeline, error)
	// FindPipelines returns the owner's and the system pipelines, with their
	// steps. all with a nil ownerID returns every pipeline; a nil ownerID
	// without all returns the system pipelines.
	FindPipelines(ctx context.Context, ownerID *string, all bool) ([]*Pipeline, error)
	// CreatePipeline inserts p and its Steps (positions from 0). ECONFLICT
	// when the owner already has a pipeline of that name (case-insensitive);
	// EINVALID past MaxPipelineSteps. A new default clears the owner's old one.
	CreatePipeline(ctx context.Context, p *Pipeline) error
	// UpdatePipeline runs fn on the pipeline (without touching steps) in one
	// transaction and saves it. ENOTFOUND, ECONFLICT as above.
	UpdatePipeline(ctx context.Context, id int64, fn func(*Pipeline) error) (*Pipeline, error)
	// DeletePipeline removes the pipeline; runs in flight keep their own
	// copy of its steps. ENOTFOUND.
	DeletePipeline(ctx context.Context, id int64) error
	// AddStep appends s to the pipeline. ENOTFOUND; EINVALID at the cap.
	AddStep(ctx context.Context, pipelineID int64, s *PipelineStep) error
	// UpdateStep runs fn on a step of the pipeline and saves it. ENOTFOUND.
	UpdateStep(ctx context.Context, pipelineID, stepID int64, fn func(*PipelineStep) error) (*PipelineStep, error)
	// DeleteStep removes a step and closes the gap in positions. ENOTFOUND.
	DeleteStep(ctx context.Context, pipelineID, stepID int64) error
	// ReorderSteps assigns positions 0, 1, 2… in the order of ids, which
	// must name every step of the pipeline exactly once (EINVALID).
	ReorderSteps(ctx context.Context, pipelineID int64, ids []int64) ([]*PipelineStep, error)
	// DefaultPipeline returns the owner's active default pipeline, else the
	// active system default, else ENOTFOUND.
	DefaultPipeline(ctx context.Context, ownerID *string) (*Pipeline, error)
}

// RoutingInput is what routing rules look at.
type RoutingInput struct {
	FileType     string         `json:"file_type"` // extension without the dot ("pdf"), or a MIME type
	MimeType     string         `json:"-"`
	Filename     string         `json:"filename"`
	Size         *int64         `json:"size"`
	DocumentType string         `json:"document_type"`
	Category     string         `json:"category"`
	Metadata     map[string]any `json:"metadata"`
}

// RoutingInputFor builds the routing input of a file record.
func RoutingInputFor(f *File) RoutingInput {
	in := RoutingInput{Filename: f.OriginalFilename, MimeType: f.MimeType, Metadata: f.AIMetadata}
	size := f.FileSize
	in.Size = &size
	if i := strings.LastIndexByte(f.OriginalFilename, '.'); i >= 0 && i < len(f.OriginalFilename)-1 {
		in.FileType = strings.ToLower(f.OriginalFilename[i+1:])
	}
	if v, ok := f.AIMetadata["document_type"].(string); ok {
		in.DocumentType = v
	}
	if c, ok := f.AIMetadata["classification"].(map[string]any); ok {
		if v, ok := c["category"].(string); ok {
			in.Category = v
		}
	}
	return in
}

// field returns the value of a rule field, and whether it is present.
func (in RoutingInput) field(name string) (string, bool) {
	switch name {
	case "file_type":
		return in.FileType, in.FileType != ""
	case "filename":
		return in.Filename, in.Filename != ""
	case "size":
		if in.Size == nil {
			return "", false
		}
		return strconv.FormatInt(*in.Size, 10), true
	case "document_type":
		return in.DocumentType, in.DocumentType != ""
	case "category":
		return in.Category, in.Category != ""
	}
	if key, ok := strings.CutPrefix(name, RoutingMetadataPrefix); ok {
		v, ok := in.Metadata[key]
		if !ok || v == nil {
			return "", false
		}
		switch x := v.(type) {
		case string:
			return x, true
		case []any:
			parts := make([]string, 0, len(x))
			for _, p := range x {
				parts = append(parts, fmt.Sprint(p))
			}
			return strings.Join(parts, ","), true
		default:
			return fmt.Sprint(x), true
		}
	}
	return "", false
}

// ValidateRoutingRule checks the rule's field, operator and value: numeric
// operators need a number, regex a valid pattern. Errors are EINVALID with
// the offending field named.
func ValidateRoutingRule(r *RoutingRule) error {
	bad := func(field, format string, args ...any) error {
		e := Errorf(EINVALID, format, args...)
		e.Fields = []FieldError{{Field: field, Message: e.Message}}
		return e
	}
	if strings.TrimSpace(r.Name) == "" {
		return bad("name", "name is required")
	}
	if !slices.Contains(RoutingBuiltinFields, r.Field) {
		key, ok := strings.CutPrefix(r.Field, RoutingMetadataPrefix)
		if !ok || strings.TrimSpace(key) == "" {
			return bad("field", "field must be one of %s or metadata.<key>", strings.Join(RoutingBuiltinFields, ", "))
		}
	}
	if !slices.Contains(RoutingOperators, r.Operator) {
		return bad("operator", "operator must be one of %s", strings.Join(RoutingOperators, ", "))
	}
	if n := utf8.RuneCountInString(r.Value); n > MaxRoutingValueLength {
		return bad("value", "value is longer than %d characters", MaxRoutingValueLength)
	}
	switch r.Operator {
	case "gt", "gte", "lt", "lte":
		if _, err := strconv.ParseFloat(strings.TrimSpace(r.Value), 64); err != nil {
			return bad("value", "value must be a number for operator %s", r.Operator)
		}
	case "regex":
		if _, err := compileRoutingRegex(r.Value); err != nil {
			return bad("value", "value is not a valid regular expression: %v", err)
		}
	}
	if r.TargetPipelineID <= 0 {
		return bad("target_pipeline_id", "target_pipeline_id is required")
	}
	return nil
}

// compileRoutingRegex compiles a rule pattern as a case-insensitive full match.
func compileRoutingRegex(pattern string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(pattern); err != nil {
		return nil, err
	}
	return regexp.Compile("(?is)^(?:" + pattern + ")$")
}

// Matches reports whether the rule matches in. String comparisons are
// case-insensitive, regex is a case-insensitive full match, gt/gte/lt/lte
// compare numbers, and a missing field matches only not_equals and
// not_contains. The rule's is_active flag is not looked at.
func (r *RoutingRule) Matches(in RoutingInput) bool {
	v, present := in.field(r.Field)
	if !present {
		return r.Operator == "not_equals" || r.Operator == "not_contains"
	}
	lv, lw := strings.ToLower(v), strings.ToLower(r.Value)
	switch r.Operator {
	case "equals", "not_equals":
		eq := lv == lw
		if !eq && r.Field == "file_type" {
			// A file type rule may name the extension ("pdf", ".pdf") or
			// the MIME type ("application/pdf").
			eq = strings.TrimPrefix(lw, ".") == lv || (in.MimeType != "" && strings.EqualFold(in.MimeType, r.Value))
		}
		return eq == (r.Operator == "equals")
	case "contains":
		return strings.Contains(lv, lw)
	case "not_contains":
		return !strings.Contains(lv, lw)
	case "gt", "gte", "lt", "lte":
		a, err1 := strconv.ParseFloat(strings.TrimSpace(v), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(r.Value), 64)
		if err1 != nil || err2 != nil {
			return false
		}
		switch r.Operator {
		case "gt":
			return a > b
		case "gte":
			return a >= b
		case "lt":
			return a < b
		default:
			return a <= b
		}
	case "regex":
		re, err := compileRoutingRegex(r.Value)
		return err == nil && re.MatchString(v)
	}
	return false
}

// MatchRules returns the first rule of rules that matches in and whose
// target pipeline, looked up with find, exists and is active, with that
// pipeline; nil, nil when none does. Rules are tried in the order given
// (ActiveRules' order: the owner's, then the system's, each by position),
// so the first match wins. A pipeline find reports as ENOTFOUND (deleted
// since the rules were read) skips its rule; other errors are returned.
func MatchRules(ctx context.Context, rules []*RoutingRule, in RoutingInput,
	find func(context.Context, int64) (*Pipeline, error)) (*RoutingRule, *Pipeline, error) {
	for _, r := range rules {
		if !r.Matches(in) {
			continue
		}
		p, err := find(ctx, r.TargetPipelineID)
		if ErrorCode(err) == ENOTFOUND {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, nil, err
		}
		if !p.IsActive {
			continue
		}
		return r, p, nil
	}
	return nil, nil, nil
}

// RoutingStore stores routing rules and applies them.
type RoutingStore interface {
	// FindRuleByID returns ENOTFOUND for unknown ids.
	FindRuleByID(ctx context.Context, id int64) (*RoutingRule, error)
	// FindRules returns the owner's rules then the system rules, each by
	// position (all with a nil ownerID: every rule).
	FindRules(ctx context.Context, ownerID *string, all bool) ([]*RoutingRule, error)
	// CreateRule inserts r; Position < 0 appends it to the owner's rules.
	CreateRule(ctx context.Context, r *RoutingRule) error
	// UpdateRule runs fn on the rule and saves it. ENOTFOUND.
	UpdateRule(ctx context.Context, id int64, fn func(*RoutingRule) error) (*RoutingRule, error)
	// DeleteRule removes a rule. ENOTFOUND.
	DeleteRule(ctx context.Context, id int64) error
	// ReorderRules assigns positions from 0 in the order of ids, which must
	// name every rule of the owner exactly once (EINVALID).
	ReorderRules(ctx context.Context, ownerID *string, ids []int64) ([]*RoutingRule, error)
	// Route returns the first matching active rule (owner's before system
	// rules) whose target pipeline is active, with that pipeline; nil, nil
	// when none matches.
	Route(ctx context.Context, ownerID *string, in RoutingInput) (*RoutingRule, *Pipeline, error)
}
