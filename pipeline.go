package docflow

import (
	"context"
	"time"
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
	Steps       []*PipelineStep `json:"steps,omitempty"`
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

// PipelineService stores pipelines and their steps.
type PipelineService interface {
	FindPipelineByID(ctx context.Context, id int64) (*Pipeline, error)
	// FindPipelines returns the owner's and the system pipelines (all when
	// ownerID is nil and all is true).
	FindPipelines(ctx context.Context, ownerID *string, all bool) ([]*Pipeline, error)
	CreatePipeline(ctx context.Context, p *Pipeline) error
	UpdatePipeline(ctx context.Context, id int64, fn func(*Pipeline) error) (*Pipeline, error)
	DeletePipeline(ctx context.Context, id int64) error
}
