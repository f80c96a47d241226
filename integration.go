package docflow

import (
	"context"
	"time"
)

// Integration directions.
const (
	DirectionSource      = "SOURCE"
	DirectionDestination = "DESTINATION"
)

// Audit actions of integrations. Their details name the type, the name
// and what changed, with endpoint values; never credentials.
const (
	AuditIntegrationCreate = "integration.create"
	AuditIntegrationUpdate = "integration.update"
	AuditIntegrationDelete = "integration.delete"
	AuditIntegrationTest   = "integration.test"
)

// Integration is a user's configured source or destination (interface.md,
// Integration; decisions.md, Integrations for the keys of each type).
// Credentials are input only: stores keep them encrypted, and a record read
// for the API carries HasCredentials instead; a record read for the actor
// that runs the integration carries them decrypted.
type Integration struct {
	ID              int64             `json:"id"`
	OwnerID         string            `json:"owner_id"`
	Direction       string            `json:"direction"`
	IntegrationType string            `json:"integration_type"`
	Name            string            `json:"name"`
	Config          map[string]any    `json:"config"`
	Credentials     map[string]string `json:"-"`
	HasCredentials  bool              `json:"has_credentials"`
	IsActive        bool              `json:"is_active"`
	LastUsedAt      *time.Time        `json:"last_used_at"`
	LastError       *string           `json:"last_error"`
	Status          IntegrationStatus `json:"status"`
	CreatedAt       time.Time         `json:"created_at"`
	UpdatedAt       time.Time         `json:"updated_at"`
}

// IntegrationStatus is what the actor running an integration reports
// (decisions.md: status {state, last_poll_at, messages_seen,
// documents_ingested, deliveries_ok, deliveries_failed}). State is one of
// the actors' integration states (connecting, connected, backing_off,
// stopped), or "idle" when no process runs it.
type IntegrationStatus struct {
	State             string     `json:"state"`
	LastPollAt        *time.Time `json:"last_poll_at"`
	MessagesSeen      int64      `json:"messages_seen"`
	DocumentsIngested int64      `json:"documents_ingested"`
	DeliveriesOK      int64      `json:"deliveries_ok"`
	DeliveriesFailed  int64      `json:"deliveries_failed"`
}

// IntegrationTester checks that an integration's configuration works: it
// connects, authenticates and looks at the folder, bucket or mailbox, and
// says what the server answered. Each supported type registers one.
type IntegrationTester interface {
	TestIntegration(ctx context.Context, in *Integration) (ok bool, message string)
}
