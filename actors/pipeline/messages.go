package pipeline

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"docflow"
	"docflow/streams"
)

// taskID is the envelope id of a step task: the same for every copy of one
// attempt, so receivers can deduplicate.
func taskID(t streams.StepTask) string {
	return fmt.Sprintf("%s:%d:%d", t.RunID, t.Position, t.Attempt)
}

func taskMessage(t streams.StepTask, now time.Time) (streams.OutboxMessage, error) {
	b, err := streams.Encode(taskID(t), now, t)
	if err != nil {
		return streams.OutboxMessage{}, err
	}
	return streams.OutboxMessage{Topic: streams.StepTopic(t.StepType), Key: streams.FileKey(t.FileID), Payload: b}, nil
}

// retryMessage puts the next attempt on a delay topic, due at due.
func retryMessage(next streams.StepTask, tier streams.RetryTier, due time.Time, reason string, now time.Time) (streams.OutboxMessage, error) {
	m, err := taskMessage(next, now)
	if err != nil {
		return m, err
	}
	m.Topic = tier.Topic()
	m.Headers = map[string]string{
		HeaderDueAt:          strconv.FormatInt(due.UnixMilli(), 10),
		HeaderTargetTopic:    streams.StepTopic(next.StepType),
		streams.HeaderReason: truncate(reason, 1024),
		streams.HeaderStep:   next.StepType,
		// The attempt that failed.
		streams.HeaderAttempt: strconv.Itoa(next.Attempt - 1),
	}
	return m, nil
}

// deadLetter records a task that failed for good on the dead-letter topic.
func deadLetter(t streams.StepTask, reason string, now time.Time) (streams.OutboxMessage, error) {
	m, err := taskMessage(t, now)
	if err != nil {
		return m, err
	}
	m.Topic = streams.TopicDLQ
	m.Headers = map[string]string{
		streams.HeaderReason:        truncate(reason, 1024),
		streams.HeaderStep:          t.StepType,
		streams.HeaderAttempt:       strconv.Itoa(t.Attempt),
		streams.HeaderOriginalTopic: streams.StepTopic(t.StepType),
	}
	return m, nil
}

// eventMessage is a document event about f.
func eventMessage(name string, f *docflow.File, runID string, extra map[string]any, now time.Time) (streams.OutboxMessage, error) {
	data := map[string]any{"file_id": f.ID, "filename": f.OriginalFilename, "task_id": runID}
	for k, v := range extra {
		data[k] = v
	}
	id := newEventID()
	b, err := streams.Encode(id, now, streams.Event{ID: id, Name: name, Timestamp: now.UTC(), OwnerID: f.OwnerID, Data: data})
	if err != nil {
		return streams.OutboxMessage{}, err
	}
	return streams.OutboxMessage{Topic: streams.TopicEvents, Key: streams.FileKey(f.ID), Payload: b}, nil
}

func ingestedMessage(m streams.FileIngested, now time.Time) (streams.OutboxMessage, error) {
	b, err := streams.Encode("ingest:"+m.RunID, now, m)
	if err != nil {
		return streams.OutboxMessage{}, err
	}
	return streams.OutboxMessage{Topic: streams.TopicFilesIngested, Key: streams.FileKey(m.FileID), Payload: b}, nil
}

func newEventID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "evt_" + hex.EncodeToString(b)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
