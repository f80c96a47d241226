package docflow

import (
	"context"
	"time"
)

// File processing states. Terminal: completed, failed, duplicate.
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusDuplicate  = "duplicate"
)

// FileStatuses lists every valid processing status.
var FileStatuses = []string{StatusPending, StatusProcessing, StatusCompleted, StatusFailed, StatusDuplicate}

// File is one ingested document. Blob keys address the blob store
// (content-addressed: the SHA-256 of the bytes).
type File struct {
	ID               int64     `json:"id"`
	FileHash         string    `json:"filehash"`
	OriginalFilename string    `json:"original_filename"`
	StoredFilename   string    `json:"stored_filename"`
	FileSize         int64     `json:"file_size"`
	MimeType         string    `json:"mime_type"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
	OwnerID          *string   `json:"owner_id"`
	PipelineID       *int64    `json:"pipeline_id"`
	Status           string    `json:"status"`
	// Source is the intake channel: upload, ui_upload, url, automation,
	// processall, watch_folder, imap.
	Source string `json:"source"`
	// DuplicateOf is the id of the original when Status is duplicate.
	DuplicateOf *int64 `json:"duplicate_of,omitempty"`
	// OriginalBlob and ProcessedBlob are blob-store keys ("" when absent).
	OriginalBlob  string `json:"-"`
	ProcessedBlob string `json:"-"`

	DocumentTitle   *string        `json:"document_title"`
	OCRText         string         `json:"-"`
	OCRQualityScore *float64       `json:"ocr_quality_score"`
	AIMetadata      map[string]any `json:"ai_metadata"`
	Language        string         `json:"language,omitempty"`
	// StorageProviders are the kinds of destination (lower case: local,
	// webdav, s3…) send_to_destinations delivered the document to, over all
	// its runs; the storage_provider filter matches them.
	StorageProviders []string `json:"storage_providers,omitempty"`

	// Current run.
	TaskID string `json:"task_id,omitempty"`
	// Processing summarises the current run; FindFiles fills it when the
	// filter asks (FileFilter.WithProcessingStatus), else it is nil.
	Processing *ProcessingStatus `json:"-"`
}

// FileListing is a file as a listing shows it (FileStore.ListFiles).
type FileListing struct {
	ID               int64     `json:"id"`
	OriginalFilename string    `json:"original_filename"`
	FileSize         int64     `json:"file_size"`
	MimeType         string    `json:"mime_type"`
	CreatedAt        time.Time `json:"created_at"`
	OwnerID          *string   `json:"owner_id"`
	// Processing summarises the current run; its Status is the file's.
	Processing ProcessingStatus `json:"processing_status"`
}

// ProcessingStatus is the summary of a file's current run, derived from its
// recorded steps.
type ProcessingStatus struct {
	Status     string `json:"status"`
	LastStep   string `json:"last_step"`
	HasErrors  bool   `json:"has_errors"`
	TotalSteps int    `json:"total_steps"`
	// PipelineID and PipelineName name the pipeline the current run
	// follows: nil before the run is routed, when it runs the built-in
	// standard steps, or when the pipeline was deleted since. Only
	// FileStore.ProcessingStatuses fills them; listings leave them
	// out, and the file record's own PipelineID stays the assigned one.
	PipelineID   *int64  `json:"-"`
	PipelineName *string `json:"-"`
}

// ProcessingLog is one entry of a file's processing log.
type ProcessingLog struct {
	ID        int64     `json:"id"`
	FileID    int64     `json:"-"`
	TaskID    string    `json:"task_id"`
	StepName  string    `json:"step_name"`
	Status    string    `json:"status"`
	Message   string    `json:"message"`
	Timestamp time.Time `json:"timestamp"`
}

// FileFilter selects files for listing. Zero values mean "no filter".
type FileFilter struct {
	// VisibleTo keeps the files it lets its user see (FileAccess.VisibleTo);
	// nil = every file.
	VisibleTo *Visibility
	IDs       []int64
	// OwnerID selects the files this user owns ("" = any owner or none).
	OwnerID string

	Search   string
	MimeType string
	Status   string
	DateFrom *time.Time
	DateTo   *time.Time // inclusive (the whole day)
	// StorageProviders selects the files delivered to any of these kinds
	// of destination (lower case).
	StorageProviders []string
	// Tags selects the files whose AI metadata holds every one of them.
	Tags             []string
	OCRQuality       string // poor, good, unchecked
	QualityThreshold float64
	// Owner selects the files this user owns; SharedWith those shared
	// with this user (either only narrows what VisibleTo lets through).
	Owner      string
	SharedWith string

	SortBy    string // id, original_filename, file_size, mime_type, created_at
	SortOrder string // asc, desc
	Page      int
	PerPage   int
	// Offset, when positive, is how many rows come before the page, in
	// place of (Page-1)*PerPage: for clients that address rows, not pages.
	Offset int

	// WithProcessingStatus makes FindFiles fill each returned File's
	// Processing in the same query.
	WithProcessingStatus bool
}

// FileSortFields lists the allowed FileFilter.SortBy values.
var FileSortFields = []string{"id", "original_filename", "file_size", "mime_type", "created_at"}

// Metadata is the AI/rules metadata extracted from a document.
// Stored in File.AIMetadata as a JSON object with these keys.
type Metadata struct {
	Title           string   `json:"title,omitempty"`
	DocumentType    string   `json:"document_type,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	Sender          string   `json:"sender,omitempty"`
	Date            string   `json:"date,omitempty"` // YYYY-MM-DD
	Amount          string   `json:"amount,omitempty"`
	Currency        string   `json:"currency,omitempty"`
	Language        string   `json:"language,omitempty"`
	ReferenceNumber string   `json:"reference_number,omitempty"`
	IBAN            string   `json:"iban,omitempty"`
	Confidence      float64  `json:"confidence,omitempty"`
	Provider        string   `json:"provider,omitempty"`
}

// ClaimSkip says why a file of a bulk claim was not claimed.
type ClaimSkip struct {
	FileID int64  `json:"file_id"`
	Reason string `json:"reason"`
}

// OwnerChange is a file AssignOwner gave a new owner, and its owner before
// (nil: it had none).
type OwnerChange struct {
	FileID int64
	From   *string
}

// Audit actions of files: who took or was given which files, and who
// deleted which.
const (
	AuditFileClaim       = "file.claim"
	AuditFileAssignOwner = "file.assign_owner"
	AuditFileDelete      = "file.delete"
)

// FileStore stores file records: one by one, and the bulk reads and
// writes of the files API and ownership.
type FileStore interface {
	// FindFileByID returns ENOTFOUND if the file does not exist.
	FindFileByID(ctx context.Context, id int64) (*File, error)
	// FindFiles returns a page of files and the total count.
	FindFiles(ctx context.Context, filter FileFilter) ([]*File, int, error)
	// ListFiles appends a page of files as a listing shows them to dst and
	// returns it with the total count: FindFiles with WithProcessingStatus,
	// for less (a caller may reuse dst from one listing to the next).
	ListFiles(ctx context.Context, filter FileFilter, dst []FileListing) ([]FileListing, int, error)
	// FindFileByHash returns the oldest non-duplicate file with that hash, or
	// ENOTFOUND.
	FindFileByHash(ctx context.Context, hash string) (*File, error)
	// UpdateFile runs fn on the file inside one transaction and saves it.
	// Returns ENOTFOUND if the file does not exist.
	UpdateFile(ctx context.Context, id int64, fn func(*File) error) (*File, error)
	// DeleteFile removes the record; returns the blob keys no other file
	// still references, so the caller can remove them. ENOTFOUND if missing.
	DeleteFile(ctx context.Context, id int64) (orphanBlobs []string, err error)
	// FindFilesByIDs returns the files that exist among ids, in id order.
	FindFilesByIDs(ctx context.Context, ids []int64) ([]*File, error)
	// DeleteFiles removes the records that exist among ids and returns
	// their ids and the blob keys no remaining file references.
	DeleteFiles(ctx context.Context, ids []int64) (deleted []int64, orphanBlobs []string, err error)
	// BlobInUse reports whether any file references the blob key.
	BlobInUse(ctx context.Context, key string) (bool, error)
	// ProcessingStatuses summarises each file's current run, by file id,
	// with the pipeline the run follows.
	ProcessingStatuses(ctx context.Context, files []*File) (map[int64]ProcessingStatus, error)
	// FindProcessingLogs returns the file's log in chronological order.
	FindProcessingLogs(ctx context.Context, fileID int64) ([]*ProcessingLog, error)
	// ClaimFiles makes claimant the owner of the files among ids that
	// access lets them claim (FileAccess.Authorize with AccessClaim),
	// decided under the rows' locks; the others are skipped with a reason
	// (not found, owned by another user — also an unclaimed file the
	// claimant may not see —, already owned by you). The errors of
	// Authorize for a claim by anyone (EBADREQUEST, EUNAUTHORIZED).
	ClaimFiles(ctx context.Context, claimant *User, access FileAccess, ids []int64) (claimed []int64, skipped []ClaimSkip, err error)
	// ShareRole returns the role (viewer, editor) a share gives userID on
	// the file, or "" when there is none.
	ShareRole(ctx context.Context, fileID int64, userID string) (string, error)
	// ShareRoles returns the roles shares give userID on the files among
	// fileIDs, by file id; files without a share are absent.
	ShareRoles(ctx context.Context, fileIDs []int64, userID string) (map[int64]string, error)
	// AssignOwner sets owner on the files among ids (nil ids: on every
	// unclaimed file) and returns those whose owner changed, in id order.
	AssignOwner(ctx context.Context, owner string, ids []int64) ([]OwnerChange, error)
}
