package docflow

import "time"

// EventIntegrationFailing is the admin notification of an integration
// failing for longer than INTEGRATION_FAILING_NOTIFY_AFTER. It goes to
// the admin notification channels only (the subscriber "admin"), never to
// webhooks or automation hooks: it is not in EventNames.
const EventIntegrationFailing = "integration.failing"

// FailingIntegration is an integration that has been failing (it has a
// last_error) since FailingSince.
type FailingIntegration struct {
	ID              int64
	OwnerID         string
	Name            string
	IntegrationType string
	Direction       string
	LastError       string
	FailingSince    time.Time
}

// IntegrationFailingEvent is the admin event telling that in has been
// failing since in.FailingSince (at is the time of the event).
func IntegrationFailingEvent(id string, in FailingIntegration, at time.Time) Event {
	owner := in.OwnerID
	return Event{ID: id, Name: EventIntegrationFailing, Timestamp: at.UTC(), OwnerID: &owner,
		Data: map[string]any{"integration_id": in.ID, "name": in.Name, "integration_type": in.IntegrationType,
			"direction": in.Direction, "owner_id": in.OwnerID, "error": in.LastError,
			"failing_since": in.FailingSince.UTC().Format(time.RFC3339)}}
}
