package streams

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"docflow"
)

// The catalogue of messages: one constructor per kind, each returning the
// outbox row to write in the transaction that makes the change it
// announces. No other package encodes an envelope for the outbox.
//
//	kind                 topic                     envelope id
//	file.ingested        TopicFilesIngested        "ingest:" + run id
//	step task            StepTopic(step type)      run:position:attempt
//	retry (delayed task) RetryTier.Topic()         run:position:attempt
//	dead letter (task)   TopicDLQ                  run:position:attempt
//	document.uploaded,
//	document.processed,
//	document.failed,
//	document.updated,
//	file.updated,
//	file.deleted         TopicEvents               evt_ + 24 hex digits
//	control (reset)      TopicControl              ctl_ + 24 hex digits
//
// file.updated and file.deleted are also written by the database trigger of
// migration 0003, in the same envelope and with ids of the same shape.

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

// Headers of a task waiting on a delay topic (RetryMessage).
const (
	HeaderDueAt       = "x-due-at"       // Unix milliseconds after which the task runs again
	HeaderTargetTopic = "x-target-topic" // the step topic it returns to
)

// newEventID draws an event id: "evt_" and 24 hex digits.
func newEventID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "evt_" + hex.EncodeToString(b)
}

// IngestID is the envelope id of run runID's file.ingested: the same
// whoever announces the run (intake, reprocessing, recovery), so receivers
// can tell copies of one announcement.
func IngestID(runID string) string { return "ingest:" + runID }

// TaskID is the envelope id of a step task: the same for every copy of one
// attempt (the task, its delayed retry, its dead letter), so receivers can
// deduplicate.
func TaskID(t StepTask) string {
	return fmt.Sprintf("%s:%d:%d", t.RunID, t.Position, t.Attempt)
}

func outboxMessage(topic string, fileID int64, id string, now time.Time, p Payload) (docflow.OutboxMessage, error) {
	b, err := Encode(id, now, p)
	if err != nil {
		return docflow.OutboxMessage{}, err
	}
	return docflow.OutboxMessage{Topic: topic, Key: FileKey(fileID), Payload: b}, nil
}

// FileIngestedMessage announces a recorded run that must be routed.
func FileIngestedMessage(m FileIngested, now time.Time) (docflow.OutboxMessage, error) {
	return outboxMessage(TopicFilesIngested, m.FileID, IngestID(m.RunID), now, m)
}

// StepTaskMessage asks the actors of t.StepType to run the task.
func StepTaskMessage(t StepTask, now time.Time) (docflow.OutboxMessage, error) {
	return outboxMessage(StepTopic(t.StepType), t.FileID, TaskID(t), now, t)
}

// RetryMessage puts next (the attempt after the one that failed with
// reason) on the tier's delay topic, to return to its step topic at due.
func RetryMessage(next StepTask, tier RetryTier, due time.Time, reason string, now time.Time) (docflow.OutboxMessage, error) {
	m, err := StepTaskMessage(next, now)
	if err != nil {
		return m, err
	}
	m.Topic = tier.Topic()
	m.Headers = map[string]string{
		HeaderDueAt:       strconv.FormatInt(due.UnixMilli(), 10),
		HeaderTargetTopic: StepTopic(next.StepType),
		HeaderReason:      truncateReason(reason),
		HeaderStep:        next.StepType,
		HeaderAttempt:     strconv.Itoa(next.Attempt - 1), // the attempt that failed
	}
	return m, nil
}

// TaskDeadLetter records on the dead-letter topic a task given up after
// t.Attempt attempts (or failed by the stall detector), in the dead-letter
// format of DeadLetter. It was not consumed from a known position, so it
// carries no x-original-partition or x-original-offset.
func TaskDeadLetter(t StepTask, reason string, now time.Time) (docflow.OutboxMessage, error) {
	m, err := StepTaskMessage(t, now)
	if err != nil {
		return m, err
	}
	m.Topic = TopicDLQ
	m.Headers = map[string]string{}
	for _, h := range deadLetterHeaders(reason, t.StepType, t.Attempt, StepTopic(t.StepType), -1, -1) {
		m.Headers[h.Key] = string(h.Value)
	}
	return m, nil
}

// DocumentUploaded announces a new upload of f (document.uploaded).
func DocumentUploaded(f *docflow.File, now time.Time) (docflow.OutboxMessage, error) {
	return eventMessage(docflow.EventDocumentUploaded, f.ID, f.OwnerID,
		documentData(f, f.Status, nil), now)
}

// DocumentProcessed announces that run runID of f ended with status
// (completed, duplicate).
func DocumentProcessed(f *docflow.File, runID, status string, now time.Time) (docflow.OutboxMessage, error) {
	return eventMessage(docflow.EventDocumentProcessed, f.ID, f.OwnerID,
		documentData(f, status, map[string]any{"task_id": runID}), now)
}

// DocumentFailed announces that run runID of f failed at step for reason.
func DocumentFailed(f *docflow.File, runID, step, reason string, now time.Time) (docflow.OutboxMessage, error) {
	return eventMessage(docflow.EventDocumentFailed, f.ID, f.OwnerID,
		documentData(f, docflow.StatusFailed, map[string]any{"task_id": runID, "step": step, "error": truncateReason(reason)}), now)
}

// DocumentUpdated announces that a person changed the fields changed of
// f's metadata (document.updated). It is the docflow.DocumentEventEncoder
// the files API is handed.
func DocumentUpdated(f *docflow.File, changed []string, now time.Time) (docflow.OutboxMessage, error) {
	return eventMessage(docflow.EventDocumentUpdated, f.ID, f.OwnerID,
		documentData(f, f.Status, map[string]any{"changed": changed}), now)
}

var _ docflow.DocumentEventEncoder = DocumentUpdated

// documentData is the data of a document event: file_id, filename,
// status, title and owner_id (what webhooks receive), plus extra.
func documentData(f *docflow.File, status string, extra map[string]any) map[string]any {
	d := map[string]any{"file_id": f.ID, "filename": f.OriginalFilename, "status": status,
		"title": f.DocumentTitle, "owner_id": f.OwnerID}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// FileEvent announces name (EventFileUpdated, EventFileDeleted) for
// fileID. The indexer reads the file's current state from Postgres, so the
// event carries only the id. The database trigger of migration 0003 writes
// the same message for changes made in SQL.
func FileEvent(name string, fileID int64, owner *string, at time.Time) (docflow.OutboxMessage, error) {
	return eventMessage(name, fileID, owner, map[string]any{"file_id": fileID}, at)
}

func eventMessage(name string, fileID int64, owner *string, data map[string]any, now time.Time) (docflow.OutboxMessage, error) {
	ev := Event{ID: newEventID(), Name: name, Timestamp: now.UTC(), OwnerID: owner, Data: data}
	return outboxMessage(TopicEvents, fileID, ev.ID, now, ev)
}

// EncodeEvent builds the outbox message of a domain event that is not
// about one file (user.signup, user.plan_changed, user.payment_issue):
// keyed by its owner so one user's events stay in order. It is the
// docflow.EventEncoder that stores writing such events are handed.
func EncodeEvent(name string, ownerID *string, data map[string]any, at time.Time) (docflow.OutboxMessage, error) {
	ev := Event{ID: newEventID(), Name: name, Timestamp: at.UTC(), OwnerID: ownerID, Data: data}
	b, err := Encode(ev.ID, at, ev)
	if err != nil {
		return docflow.OutboxMessage{}, err
	}
	key := ""
	if ownerID != nil {
		key = "user:" + *ownerID
	}
	return docflow.OutboxMessage{Topic: TopicEvents, Key: key, Payload: b}, nil
}

var _ docflow.EventEncoder = EncodeEvent
