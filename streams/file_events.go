package streams

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"docflow"
)

// Internal event names on the events topic, for the search indexer. They
// are not webhook events (docflow.EventNames): consumers that deliver
// events to subscribers skip names they do not know.
const (
	// EventFileUpdated: a file's searchable fields changed outside a
	// pipeline run (metadata edit, owner, shares, a new embedding).
	EventFileUpdated = "file.updated"
	// EventFileDeleted: a file record was removed.
	EventFileDeleted = "file.deleted"
)

// FileEvent returns the outbox message announcing name (EventFileUpdated,
// EventFileDeleted or a docflow event about one file) for fileID. Enqueue it
// in the transaction that made the change. The indexer reads the file's
// current state from Postgres, so the event carries only the id.
func FileEvent(name string, fileID int64, owner *string, at time.Time) (OutboxMessage, error) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	ev := Event(docflow.Event{
		ID:        "evt_" + hex.EncodeToString(b),
		Name:      name,
		Timestamp: at.UTC(),
		OwnerID:   owner,
		Data:      map[string]any{"file_id": fileID},
	})
	payload, err := Encode(ev.ID, at, ev)
	if err != nil {
		return OutboxMessage{}, err
	}
	return OutboxMessage{Topic: TopicEvents, Key: FileKey(fileID), Payload: payload}, nil
}
