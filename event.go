package docflow

import "time"

// Event names delivered to webhooks and automation hooks.
const (
	EventDocumentUploaded  = "document.uploaded"
	EventDocumentProcessed = "document.processed"
	EventDocumentFailed    = "document.failed"
	EventUserSignup        = "user.signup"
	EventUserPlanChanged   = "user.plan_changed"
	EventUserPaymentIssue  = "user.payment_issue"
)

// EventDocumentUpdated: a person changed a document's metadata
// (MetadataEdit); its data adds changed, the fields that changed.
const EventDocumentUpdated = "document.updated"

// EventNames lists every event in a stable order.
var EventNames = []string{
	EventDocumentUploaded, EventDocumentProcessed, EventDocumentFailed, EventDocumentUpdated,
	EventUserSignup, EventUserPlanChanged, EventUserPaymentIssue,
}

// Event is a domain event carried on the events topic.
type Event struct {
	ID        string         `json:"id"` // evt_ + random
	Name      string         `json:"event"`
	Timestamp time.Time      `json:"timestamp"`
	OwnerID   *string        `json:"owner_id"`
	Data      map[string]any `json:"data"`
}
