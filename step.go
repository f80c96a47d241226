package docflow

import (
	"context"
	"time"
)

// StepTest is the engine's test step type: it can be told (through its
// config) to succeed, fail, panic or stall, so faults can be exercised
// without the heavy steps. It is not part of the public catalogue.
const StepTest = "test"

// Step is one step type's logic. Run is called by the pipeline engine inside
// a recovered actor, under the step's timeout (ctx), with a copy of the file
// record that it may change: the engine writes the changed fields back in
// the same transaction as the step result.
//
// Run must be safe to call again for the same (run, position): a task whose
// result was not recorded before a crash is run again. Errors carrying
// EINVALID (a problem with the document itself) fail the step at once;
// every other error is retried with the configured delays.
type Step interface {
	Type() string
	Run(ctx context.Context, in *StepInput) (*StepResult, error)
}

// StepFunc adapts a function to the Step interface.
type StepFunc struct {
	Name string
	Fn   func(ctx context.Context, in *StepInput) (*StepResult, error)
}

// Type implements Step.
func (s StepFunc) Type() string { return s.Name }

// Run implements Step.
func (s StepFunc) Run(ctx context.Context, in *StepInput) (*StepResult, error) {
	return s.Fn(ctx, in)
}

// StepInput is what a step receives.
type StepInput struct {
	RunID    string
	Position int
	StepType string
	Label    string
	Attempt  int // 1 for the first attempt
	// Config is the step's configuration (from the pipeline when the run
	// was routed).
	Config map[string]any
	// Options are the run's options (e.g. force_cloud_ocr from reprocess).
	Options map[string]any
	// File is a copy of the record; changes to its step-writable fields
	// (ProcessedBlob, DocumentTitle, OCRText, OCRQualityScore, AIMetadata,
	// Language, StorageProviders, Status duplicate + DuplicateOf) are saved.
	File *File
	// Blobs reads originals and writes processed versions.
	Blobs BlobStore
}

// StepResult is what a step reports on success.
type StepResult struct {
	// Skipped marks the step as skipped rather than completed.
	Skipped bool
	// Message goes to the processing log.
	Message string
	// Stop ends the run after this step as completed (for example a
	// duplicate: the remaining steps are skipped).
	Stop bool
	// Bytes processed, for the step metric.
	Bytes int64
	// Embedding, when set, is stored as the file's embedding.
	Embedding      []float32
	EmbeddingModel string
	// Deliveries record where send_to_destinations put the file.
	Deliveries []Delivery
}

// Delivery is one copy of a file sent to a destination by a run.
type Delivery struct {
	Destination string `json:"destination"` // integration id or "local"
	Provider    string `json:"provider"`    // the destination's kind: local, webdav, s3…
	Status      string `json:"status"`      // delivered, failed
	RemotePath  string `json:"remote_path"`
	Message     string `json:"message"`
}

// StepTypeInfo describes a step type of the catalogue
// (GET /api/pipelines/step-types).
type StepTypeInfo struct {
	Label        string                  `json:"label"`
	Description  string                  `json:"description"`
	ConfigSchema map[string]ConfigOption `json:"config_schema"`
}

// ConfigOption describes one key of a step's config.
type ConfigOption struct {
	Type        string   `json:"type"` // boolean, select, string
	Default     any      `json:"default"`
	Options     []string `json:"options,omitempty"`
	Description string   `json:"description,omitempty"`
}

// StepCatalogue returns the step types users can put in a pipeline, keyed by
// type. Each call returns a fresh map.
func StepCatalogue() map[string]StepTypeInfo {
	langs := append([]string{"auto"}, OCRLanguages...)
	return map[string]StepTypeInfo{
		StepConvertToPDF: {Label: "Convert to PDF", Description: "Convert office documents and images to PDF",
			ConfigSchema: map[string]ConfigOption{}},
		StepCheckDuplicates: {Label: "Check duplicates", Description: "Stop processing when an identical document already exists",
			ConfigSchema: map[string]ConfigOption{}},
		StepOCR: {Label: "OCR", Description: "Extract the text layer or recognise text with Tesseract or a cloud OCR provider",
			ConfigSchema: map[string]ConfigOption{
				"force_cloud_ocr": {Type: "boolean", Default: false, Description: "Use the cloud OCR provider even when a text layer exists"},
				"ocr_language": {Type: "select", Default: "auto", Options: langs,
					Description: "Tesseract language codes joined with +, or auto"},
			}},
		StepExtractMetadata: {Label: "Extract metadata", Description: "Extract title, sender, date, amount and tags",
			ConfigSchema: map[string]ConfigOption{}},
		StepClassify: {Label: "Classify", Description: "Assign a document category from classification rules",
			ConfigSchema: map[string]ConfigOption{
				"use_builtin_rules": {Type: "boolean", Default: true, Description: "Evaluate the built-in rules besides the user's"},
			}},
		StepEmbedMetadata: {Label: "Embed metadata", Description: "Write the extracted metadata into the PDF properties",
			ConfigSchema: map[string]ConfigOption{}},
		StepComputeEmbedding: {Label: "Compute embedding", Description: "Compute the embedding used for similarity search",
			ConfigSchema: map[string]ConfigOption{}},
		StepSendToDestinations: {Label: "Send to destinations", Description: "Deliver the processed file to the configured storage destinations",
			ConfigSchema: map[string]ConfigOption{}},
	}
}

// Run states (runs.status). A run is the processing of one file by one
// pipeline; a file's processing status follows its current run.
const (
	RunPending    = "pending"
	RunProcessing = "processing"
	RunCompleted  = "completed"
	RunFailed     = "failed"
	RunDuplicate  = "duplicate"
	// RunSuperseded: a newer run of the same file started (reprocess).
	RunSuperseded = "superseded"
)

// RunStep is one recorded step of a run.
type RunStep struct {
	RunID      string         `json:"run_id"`
	Position   int            `json:"position"`
	StepType   string         `json:"step_type"`
	Label      string         `json:"label"`
	Config     map[string]any `json:"config"`
	Status     string         `json:"status"`
	Attempts   int            `json:"attempts"`
	Message    string         `json:"message"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
}

// Run is one processing run of a file.
type Run struct {
	ID         string         `json:"id"`
	FileID     int64          `json:"file_id"`
	PipelineID *int64         `json:"pipeline_id"`
	Status     string         `json:"status"`
	Options    map[string]any `json:"options"`
	CreatedAt  time.Time      `json:"created_at"`
	StartedAt  *time.Time     `json:"started_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
	Steps      []*RunStep     `json:"steps,omitempty"`
}

// RunStore reads the recorded runs. (The processing status and log of a
// file are derived from them by the file store.)
type RunStore interface {
	// FindRun returns the run with its steps, or ENOTFOUND.
	FindRun(ctx context.Context, runID string) (*Run, error)
	// PendingCount counts runs queued or in progress.
	PendingCount(ctx context.Context) (int, error)
}

// QueueStats is GET /api/queue/stats: consumer lag per step topic, the
// workers' load and a database summary.
type QueueStats struct {
	Queues      map[string]int64 `json:"queues"`
	TotalQueued int64            `json:"total_queued"`
	Workers     WorkerStats      `json:"workers"`
	DBSummary   DBSummary        `json:"db_summary"`
}

// WorkerStats describes the workers: the "workers" object of
// GET /api/queue/stats.
type WorkerStats struct {
	Active        []ActiveTask `json:"active"`
	Reserved      int          `json:"reserved"`  // tasks held by workers, not running yet
	Scheduled     int          `json:"scheduled"` // tasks waiting for a retry
	WorkersOnline int          `json:"workers_online"`
}

// ActiveTask is a step attempt being run.
type ActiveTask struct {
	ID      string     `json:"id"`   // run id
	Name    string     `json:"name"` // step type
	Args    []any      `json:"args"` // file id, attempt
	Started *time.Time `json:"started"`
	Worker  string     `json:"worker"`
}

// DBSummary counts files by status.
type DBSummary struct {
	TotalFiles       int                `json:"total_files"`
	Processing       int                `json:"processing"`
	Failed           int                `json:"failed"`
	Completed        int                `json:"completed"`
	Pending          int                `json:"pending"`
	RecentProcessing []RecentProcessing `json:"recent_processing"`
}

// RecentProcessing is a file being processed and its current step.
type RecentProcessing struct {
	FileID      int64  `json:"file_id"`
	Filename    string `json:"filename"`
	CurrentStep string `json:"current_step"`
}

// QueueService answers the queue endpoints.
type QueueService interface {
	QueueStats(ctx context.Context) (*QueueStats, error)
	// PendingCount counts documents queued or in progress.
	PendingCount(ctx context.Context) (int, error)
}
