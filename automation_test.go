package docflow

import (
	"testing"
	"time"
)

func TestHookPayload(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 500_000_000, time.UTC)
	owner := "alice"
	doc := HookPayload(Event{ID: "evt_1", Name: EventDocumentProcessed, Timestamp: at, OwnerID: &owner,
		Data: map[string]any{"file_id": int64(7), "filename": "a.pdf", "status": "completed", "title": "A",
			"owner_id": owner, "task_id": "run-1"}})
	want := map[string]any{"id": "evt_1", "event": EventDocumentProcessed, "timestamp": float64(at.Unix()) + 0.5,
		"document_id": int64(7), "filename": "a.pdf", "status": "completed", "title": "A", "owner_id": "alice"}
	if len(doc) != len(want) {
		t.Fatalf("document payload %v", doc)
	}
	for k, v := range want {
		if doc[k] != v {
			t.Errorf("document payload %s = %v, want %v", k, doc[k], v)
		}
	}

	user := HookPayload(Event{ID: "evt_2", Name: EventUserSignup, Timestamp: at, OwnerID: &owner,
		Data: map[string]any{"user_id": owner, "display_name": "Alice", "source": "local", "id": "spoofed", "event": "x"}})
	if user["id"] != "evt_2" || user["event"] != EventUserSignup || user["user_id"] != "alice" ||
		user["owner_id"] != "alice" || user["display_name"] != "Alice" || user["document_id"] != nil {
		t.Errorf("user payload %v", user)
	}

	unclaimed := HookPayload(Event{ID: "evt_3", Name: EventDocumentUploaded, Timestamp: at,
		Data: map[string]any{"file_id": int64(8), "filename": "b.txt", "status": "pending", "title": nil, "owner_id": nil}})
	if v, ok := unclaimed["owner_id"]; !ok || v != nil {
		t.Errorf("unclaimed payload owner_id %v (present %v)", v, ok)
	}

	for _, name := range EventNames {
		if p := HookPayload(SampleEvent(name, "bob", at)); p["event"] != name || p["owner_id"] != "bob" {
			t.Errorf("sample %s: %v", name, p)
		}
	}
}
