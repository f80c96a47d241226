package docflow

import (
	"context"
	"time"
)

// AutomationHook is an automation platform's subscription to events (the
// REST-hooks pattern): made with an API token, owned by the token's user.
// Secret is input only; HasSecret tells whether one is set. A hook sees
// only the events about its owner's documents and about its owner, unless
// SeesAll (its owner was an administrator when it subscribed).
type AutomationHook struct {
	ID          int64     `json:"id"`
	OwnerID     string    `json:"-"`
	TargetURL   string    `json:"target_url"`
	Secret      string    `json:"-"`
	HasSecret   bool      `json:"has_secret"`
	Events      []string  `json:"events"`
	IsActive    bool      `json:"is_active"`
	HookType    string    `json:"hook_type"`
	Description string    `json:"description"`
	SeesAll     bool      `json:"-"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// AutomationHookStore stores automation hooks. Every call is scoped to
// the owner: another user's hook is ENOTFOUND (an administrator's
// HookViewer reaches every hook).
type AutomationHookStore interface {
	CreateHook(ctx context.Context, h *AutomationHook) error
	FindHooks(ctx context.Context, ownerID string) ([]*AutomationHook, error)
	DeleteHook(ctx context.Context, ownerID string, id int64) error
	// FindHook returns hook id as v may see it; ENOTFOUND otherwise.
	FindHook(ctx context.Context, v HookViewer, id int64) (*AutomationHook, error)
	// UpdateHook applies p to hook id; ENOTFOUND when v may not see it.
	// Pausing (IsActive false) stops recording events for the hook and
	// drops its deliveries still queued when their attempt comes.
	UpdateHook(ctx context.Context, v HookViewer, id int64, p AutomationHookPatch) (*AutomationHook, error)
	// ListHookDeliveries pages hook id's delivery log, newest first, each
	// delivery with its attempts; ENOTFOUND when v may not see the hook.
	ListHookDeliveries(ctx context.Context, v HookViewer, id int64, page, perPage int) ([]DeliveryLogEntry, int, error)
}

// HookViewer is who asks for a hook: its owner, or an administrator, who
// reaches every hook.
type HookViewer struct {
	UserID string
	Admin  bool
}

// AutomationHookPatch is a partial update of an automation hook (nil:
// unchanged). An empty Secret removes the secret.
type AutomationHookPatch struct {
	TargetURL   *string
	Secret      *string
	Events      *[]string
	IsActive    *bool
	HookType    *string
	Description *string
}

// Audit actions of the automation hooks API.
const (
	AuditHookSubscribe   = "automation_hook.subscribe"
	AuditHookUnsubscribe = "automation_hook.unsubscribe"
	AuditHookUpdate      = "automation_hook.update"
)

// HookPayload is the flat body of an automation hook delivery. id is the
// event id (evt_…, the same on every attempt: receivers deduplicate by
// it), event its name, timestamp Unix seconds with a fraction. Document
// events add document_id, filename, status, title and owner_id; user
// events add user_id, owner_id (the same user) and the event's own fields
// (display_name, source, plan…), which never replace id, event or
// timestamp.
func HookPayload(ev Event) map[string]any {
	out := map[string]any{}
	if _, doc := ev.Data["file_id"]; doc {
		out["document_id"] = ev.Data["file_id"]
		for _, k := range []string{"filename", "status", "title"} {
			out[k] = ev.Data[k]
		}
	} else {
		for k, v := range ev.Data {
			out[k] = v
		}
	}
	if ev.OwnerID != nil {
		out["owner_id"] = *ev.OwnerID
	} else if _, ok := out["owner_id"]; !ok {
		out["owner_id"] = nil
	}
	out["id"] = ev.ID
	out["event"] = ev.Name
	out["timestamp"] = float64(ev.Timestamp.UnixMicro()) / 1e6
	return out
}

// SampleEvent is an example of event name for the triggers sample:
// ownerID's document 1 (or ownerID itself for user events).
func SampleEvent(name, ownerID string, now time.Time) Event {
	owner := &ownerID
	ev := Event{ID: "evt_sample000000000000000000", Name: name, Timestamp: now.UTC(), OwnerID: owner}
	switch name {
	case EventDocumentUploaded, EventDocumentProcessed, EventDocumentFailed, EventDocumentUpdated:
		status := map[string]string{EventDocumentUploaded: StatusPending, EventDocumentProcessed: StatusCompleted,
			EventDocumentFailed: StatusFailed, EventDocumentUpdated: StatusCompleted}[name]
		ev.Data = map[string]any{"file_id": 1, "filename": "invoice-2024-001.pdf", "status": status,
			"title": "Invoice 2024-001", "owner_id": ownerID}
		if name == EventDocumentUpdated {
			ev.Data["changed"] = []string{"title", "tags"}
		}
	case EventUserPlanChanged:
		ev.Data = map[string]any{"user_id": ownerID, "old_tier": "free", "new_tier": "pro"}
	case EventUserPaymentIssue:
		ev.Data = map[string]any{"user_id": ownerID, "issue": "card declined"}
	default:
		ev.Data = map[string]any{"user_id": ownerID, "display_name": "Ada Lovelace", "source": "local"}
	}
	return ev
}
