package docflow

import (
	"context"
	"path"
	"strings"
	"time"
)

// Statuses of a file's delivery to one destination.
const (
	// DestinationQueued: waiting for its destination's actor.
	DestinationQueued = "queued"
	// DestinationSending: an attempt is under way.
	DestinationSending = "sending"
	// DestinationDelivered: the destination holds the document.
	DestinationDelivered = "delivered"
	// DestinationRetrying: an attempt failed; the next is due at
	// next_attempt_at.
	DestinationRetrying = "retrying"
	// DestinationFailed: given up (a refusal for good, or the last retry
	// failed); send-to asks again.
	DestinationFailed = "failed"
	// DestinationCancelled: the destination was deleted or deactivated
	// before the document reached it.
	DestinationCancelled = "cancelled"
)

// SystemDestination names the system-wide folder (LOCAL_DESTINATION_DIR)
// among a file's destinations.
const SystemDestination = "local"

// FileDestination is one destination's delivery of a file, as the file's
// record shows it (GET /api/files/{id}, destinations): the latest
// request's state. IntegrationID is nil for the system-wide folder and
// for an integration deleted since.
type FileDestination struct {
	IntegrationID *int64 `json:"integration_id"`
	// Type is the destination's type, upper case (LOCAL, WEBDAV, S3…).
	Type string `json:"type"`
	// Name is the integration's name ("LOCAL_DESTINATION_DIR" for the
	// system-wide folder).
	Name          string     `json:"name"`
	Status        string     `json:"status"`
	RemotePath    string     `json:"remote_path"`
	Error         *string    `json:"error"`
	Attempts      int        `json:"attempts"`
	DeliveredAt   *time.Time `json:"delivered_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
}

// DeliveryTask is one attempt to deliver a file to a destination
// integration, as storage hands it to the integration's actor
// (DestinationStore.StartDelivery): the delivery's identity, the attempt,
// and what the document is.
type DeliveryTask struct {
	DeliveryID    int64
	FileID        int64
	IntegrationID int64
	// Request counts the requests of this (file, destination): a new run's
	// delivery or a send-to makes a new one, and an attempt of an older
	// request is stale.
	Request int64
	// Attempt is this attempt's number within the request, from 1.
	Attempt int
	// Claim is the attempt's token: while its lease lasts no one else
	// starts an attempt of the delivery (RenewDeliveryClaims extends it,
	// ReleaseDeliveryClaims gives it back).
	Claim int64
	// Blob is the blob to deliver: the processed file, else the original.
	Blob string
	// Fields fill the integration's filename_template.
	Fields FilenameFields
	// Doc is the document's description, without its Name (which the
	// integration's template makes).
	Doc DestinationDoc
}

// DeliveryClaimedError is StartDelivery's answer when another attempt of
// the delivery is under way: its claim's lease lasts until Until (the
// process that holds it renews it; when that process died, the delivery
// can be claimed after Until).
type DeliveryClaimedError struct {
	Until time.Time
}

func (e *DeliveryClaimedError) Error() string {
	return "the delivery is being attempted elsewhere until " + e.Until.UTC().Format(time.RFC3339)
}

// DeliveryOutcome is how an attempt ended, as the integration's actor
// records it (DestinationStore.FinishDelivery).
type DeliveryOutcome struct {
	DeliveryID    int64
	FileID        int64
	IntegrationID int64
	Request       int64
	Attempt       int
	// Claim is the attempt's token (DeliveryTask.Claim): the outcome is
	// recorded only while the delivery still holds it, so an attempt
	// whose process was paused past its lease, and whose delivery another
	// process took over, records nothing when it resumes. 0 records
	// whatever holds the delivery.
	Claim int64
	// Status is DeliveryDelivered, DestinationRetrying, DeliveryFailed or
	// DestinationCancelled.
	Status     string
	RemotePath string
	// Error is what a user is shown of a failure ("" when delivered).
	Error string
	// NextAttemptAt is when a retrying delivery is tried again.
	NextAttemptAt *time.Time
	// Log is the line the file's processing log gets.
	Log string
	At  time.Time
}

// DeliveryFinish is an outcome to record with the task message of its
// retry, if any.
type DeliveryFinish struct {
	Outcome DeliveryOutcome
	Retry   *OutboxMessage
}

// DestinationStore is what delivery to destinations asks of storage
// (postgres.DestinationStore). Every method is safe for concurrent use.
type DestinationStore interface {
	// FileDestinations returns the deliveries of file id, the
	// system-wide folder first, then by integration.
	FileDestinations(ctx context.Context, fileID int64) ([]FileDestination, error)
	// EnqueueFileDeliveries queues the delivery of f to each active
	// destination integration of owner ("": none), for run runID, with the task
	// message of each, in one transaction, and records local (the
	// system-wide folder's delivery, when not nil). A second call for the
	// same run queues nothing again (a retried step). It returns the
	// deliveries queued.
	EnqueueFileDeliveries(ctx context.Context, f *File, owner, runID string, local *FileDestination) ([]FileDestination, error)
	// SendFileTo queues a new delivery of file id to integration
	// integrationID of owner (send-to). ENOTFOUND when the integration is
	// not owner's; EINVALID when it is not an active destination.
	SendFileTo(ctx context.Context, fileID int64, owner string, integrationID int64) error
}

// FilenameFieldsOf returns the values of f's filename_template
// placeholders when the delivered file has extension ext (".pdf" for a
// processed document): the title (document_title, else the AI metadata's
// title), the date (the AI metadata's date when it is YYYY-MM-DD, else
// the upload's), the category (the classification's, else the document
// type) and the uploaded name with ext.
func FilenameFieldsOf(f *File, ext string) FilenameFields {
	ff := FilenameFields{ID: f.ID, Ext: ext, Date: f.CreatedAt.UTC().Format(time.DateOnly)}
	meta := f.AIMetadata
	text := func(v any) string { s, _ := v.(string); return strings.TrimSpace(s) }
	if f.DocumentTitle != nil && strings.TrimSpace(*f.DocumentTitle) != "" {
		ff.Title = strings.TrimSpace(*f.DocumentTitle)
	} else {
		ff.Title = text(meta["title"])
	}
	if d := text(meta["date"]); d != "" {
		if _, err := time.Parse(time.DateOnly, d); err == nil {
			ff.Date = d
		}
	}
	if c, ok := meta["classification"].(map[string]any); ok {
		if cat := text(c["category"]); cat != "" && cat != "unknown" {
			ff.Category = cat
		}
	}
	if ff.Category == "" {
		ff.Category = text(meta["document_type"])
	}
	name := f.OriginalFilename
	if ext != "" && !strings.EqualFold(path.Ext(name), ext) {
		name = strings.TrimSuffix(name, path.Ext(name)) + ext
	}
	ff.OriginalFilename = name
	return ff
}
