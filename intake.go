package docflow

import (
	"context"
	"io"
	"sort"
	"strings"
	"time"
)

// Intake channels, recorded as File.Source.
const (
	ChannelUpload      = "upload"
	ChannelUIUpload    = "ui_upload"
	ChannelURL         = "url"
	ChannelAutomation  = "automation"
	ChannelProcessAll  = "processall"
	ChannelWatchFolder = "watch_folder"
	ChannelEmail       = "email" // IMAP sources
)

// SupportedFileTypes maps each accepted extension (lower case, no dot) to
// the MIME type recorded for it. Each call returns a fresh map.
func SupportedFileTypes() map[string]string {
	return map[string]string{
		"pdf":  "application/pdf",
		"doc":  "application/msword",
		"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		"xls":  "application/vnd.ms-excel",
		"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
		"ppt":  "application/vnd.ms-powerpoint",
		"pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
		"txt":  "text/plain",
		"csv":  "text/csv",
		"rtf":  "application/rtf",
		"jpg":  "image/jpeg",
		"jpeg": "image/jpeg",
		"png":  "image/png",
		"gif":  "image/gif",
		"bmp":  "image/bmp",
		"tiff": "image/tiff",
		"tif":  "image/tiff",
		"webp": "image/webp",
		"svg":  "image/svg+xml",
	}
}

// SupportedTypesText lists the accepted extensions for error details.
func SupportedTypesText() string {
	exts := make([]string, 0, 20)
	for ext := range SupportedFileTypes() {
		exts = append(exts, "."+ext)
	}
	sort.Strings(exts)
	return strings.Join(exts, ", ")
}

// Upload is one document arriving through any channel.
type Upload struct {
	// Filename as the client sent it; intake sanitises it.
	Filename string
	Body     io.Reader
	// Size is the declared length in bytes, -1 when unknown. A declared
	// size over the limit is refused before anything is read.
	Size int64
	// User is the uploader; nil for system channels (watch folders,
	// processall). The owner is User.ID, or none when the ID is empty
	// (single-user mode).
	User    *User
	Channel string
	// PipelineID assigns a pipeline explicitly (nil: routing decides).
	PipelineID *int64
	// SkipDuplicateRecord answers an exact duplicate without recording
	// anything (ui-upload); other channels record it with status duplicate.
	SkipDuplicateRecord bool
	// Metadata, when not empty, is recorded in the file's metadata
	// (File.AIMetadata) from the start, e.g. the mail an attachment came
	// with under "email".
	Metadata map[string]any
	// Idempotency, when not nil, is the Idempotency-Key the request
	// claimed: the recorded file is remembered with it (IngestRecord).
	Idempotency *IdempotencyClaim
}

// IntakeResult is what an accepted upload produced.
type IntakeResult struct {
	// File is the recorded file; for an unrecorded duplicate it is the
	// would-be record (no ID).
	File *File
	// TaskID is the id of the queued run ("" when nothing was queued).
	TaskID string
	// DuplicateOf is the original when the content was an exact duplicate.
	DuplicateOf *File
}

// ReprocessOptions are carried into the new run.
type ReprocessOptions struct {
	ForceCloudOCR bool
}

// ReprocessResult is one file queued again.
type ReprocessResult struct {
	File   *File
	TaskID string
}

// ProcessAllResult answers POST /api/processall.
type ProcessAllResult struct {
	PDFFiles  []string
	TaskIDs   []string
	Throttled bool
}

// IntakeService brings documents in: it streams them to the blob store
// while hashing, enforces limits and types, deduplicates, and records the
// file, its run and the file.ingested message in one transaction.
type IntakeService interface {
	// Admit checks, before any byte of the body is read, that user may
	// upload on channel now. EFORBIDDEN when the user is blocked;
	// ERATELIMIT (with RetryAfter) when the per-user window (ui-upload and
	// process-url only) or the daily limit is exhausted. The window is a
	// rate limit (off with RATE_LIMITING_ENABLED=false); a nil or anonymous
	// user, the single user of an instance without authentication, gets
	// RATE_LIMIT_UPLOAD instead of the per-user window.
	Admit(ctx context.Context, user *User, channel string) error
	// Ingest stores and records u. ETOOLARGE past MAX_UPLOAD_SIZE (declared
	// or streamed); EBADREQUEST for an empty file or a type outside the
	// supported list (by extension or by content); ERATELIMIT when the
	// daily limit is reached meanwhile. On any error nothing is recorded
	// and no blob of this upload is left behind.
	Ingest(ctx context.Context, u Upload) (*IntakeResult, error)
	// FetchURL downloads rawURL and ingests it. EBADREQUEST for malformed
	// URLs, non-http(s) schemes, private or internal addresses and
	// unsupported types; ENOTFOUND when the remote answers 404; ETIMEOUT
	// past URL_FETCH_TIMEOUT; ETOOLARGE past MAX_UPLOAD_SIZE; EBADGATEWAY
	// when the server cannot be reached or fails.
	// claim, when not nil, is the request's Idempotency-Key (Upload).
	FetchURL(ctx context.Context, user *User, rawURL, filename string, claim *IdempotencyClaim) (*IntakeResult, error)
	// Reprocess starts a new run for each file. Per-file errors are
	// returned in errs (keyed by file id): ENOTFOUND for unknown files,
	// EBADREQUEST when the stored original (or, with ForceCloudOCR,
	// neither original nor processed file) is missing.
	Reprocess(ctx context.Context, ids []int64, opts ReprocessOptions) (ok []ReprocessResult, errs map[int64]error, err error)
	// ProcessAll ingests every PDF of the processall folder, staggering the
	// runs when there are more than PROCESSALL_THROTTLE_THRESHOLD.
	ProcessAll(ctx context.Context, user *User) (*ProcessAllResult, error)
}

// IngestRecord is one intake write, handed to storage as data. Intake
// decides everything (the file's fields and id, its run, its messages,
// whether to deduplicate, the daily limit); storage records it all in one
// transaction and enforces the decisions atomically against concurrent
// writers: the duplicate check and the daily count happen inside it.
type IngestRecord struct {
	// ID is the file id drawn beforehand (NewFileID), the id the Messages
	// name. 0 lets storage draw one, which no message can name then.
	ID int64
	// File carries the fields intake decided (hash, names, size, MIME,
	// owner, source, blob, pipeline, metadata). On success storage sets
	// ID, CreatedAt, UpdatedAt, Status, DuplicateOf and TaskID; after an
	// error, or for a duplicate left unrecorded, ID is 0.
	File *File
	// Dedup records an exact duplicate of an existing original with status
	// duplicate, without run or messages. Without it the file is recorded as
	// a normal pending file that still names the original in DuplicateOf.
	Dedup bool
	// SkipDuplicateRecord records nothing for a duplicate (ui-upload).
	SkipDuplicateRecord bool
	// DailyLimit > 0 refuses the file with ERATELIMIT (RetryAfter: the
	// seconds to midnight UTC) when its owner already recorded that many
	// files today.
	DailyLimit int
	// RunID is the run to create, with RunOptions, for a file recorded
	// pending ("" for none). It becomes the file's TaskID.
	RunID      string
	RunOptions map[string]any
	// Messages are enqueued with a file recorded pending (not with a
	// duplicate), in the same transaction.
	Messages []OutboxMessage
	// Seen, when not nil, is the watch-folder file this record takes in,
	// remembered in the same transaction so that a crash can never separate
	// the record from the memory.
	Seen *WatchSeen
	// Mail, when not nil, is the mail attachment this record takes in,
	// remembered in the same transaction: a second record of the same
	// attachment fails with ECONFLICT and writes nothing.
	Mail *MailSeen
	// Idempotency, when not nil, is the key of the request taking the
	// file in: the recorded file's id and the request's hash
	// (IdempotencyClaim.HashFor the file's hash) are stored with the key,
	// still running, in the same transaction.
	Idempotency *IdempotencyClaim
}

// MailSeen names one attachment of one mail of an IMAP source: the
// integration, the mail's key (its Message-ID, or UIDVALIDITY and UID when
// it has none) and the attachment's position among the mail's attachments.
// Generation is the generation of the integration's settings the source
// runs under (SourceClaim.Generation): storage refuses the record, with
// ENOTFOUND, once the integration is inactive, deleted or changed.
type MailSeen struct {
	IntegrationID int64
	MessageKey    string
	Attachment    int
	Generation    int64
}

// WatchSeen is one file a watch folder has taken in (or refused).
type WatchSeen struct {
	Folder string
	Name   string
	Size   int64
	// MTime is compared at microseconds, PostgreSQL's precision.
	MTime time.Time
}

// UploadPolicy is what intake needs to know about an uploader before
// reading the body.
type UploadPolicy struct {
	Blocked bool
	// DailyLimit is the profile's daily_upload_limit (nil = the global
	// default; 0 = unlimited).
	DailyLimit *int
	// UsedToday counts the files the user recorded today (UTC).
	UsedToday int
}

// Requeue is one file queued again with a new run: storage points the file
// at the run, sets it pending and enqueues Messages, all in one
// transaction.
type Requeue struct {
	FileID   int64
	RunID    string
	Options  map[string]any
	Messages []OutboxMessage
}
