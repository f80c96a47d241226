package streams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"docflow"
)

// EnvelopeVersion is the envelope version this code writes and the highest
// it reads.
//
// NOTE: decoding is strict (unknown fields are rejected, at the envelope and
// in data), so adding a field to a payload means a new version: bump
// EnvelopeVersion and teach the decoder the old one, so that a rolling
// upgrade never dead-letters messages of the previous version.
const EnvelopeVersion = 1

// Envelope types.
const (
	TypeFileIngested = "file.ingested"
	TypeStepTask     = "step.task"
	TypeEvent        = "event"
)

// Envelope is the versioned wrapper of every message value:
// {"v":1,"type":"step.task","id":"…","ts":"…","data":{…}}.
type Envelope struct {
	V    int             `json:"v"`
	Type string          `json:"type"`
	ID   string          `json:"id"` // unique per message; receivers deduplicate on it
	TS   time.Time       `json:"ts"`
	Data json.RawMessage `json:"data"`
}

// Payload is a message body that knows its envelope type and checks itself.
type Payload interface {
	EnvelopeType() string
	Validate() error
}

// FileIngested announces a recorded file whose run must be routed.
type FileIngested struct {
	FileID     int64          `json:"file_id"`
	RunID      string         `json:"run_id"`
	OwnerID    *string        `json:"owner_id"`
	PipelineID *int64         `json:"pipeline_id,omitempty"` // explicit assignment, else routing decides
	Options    map[string]any `json:"options,omitempty"`
}

// EnvelopeType implements Payload.
func (FileIngested) EnvelopeType() string { return TypeFileIngested }

// Validate implements Payload.
func (m FileIngested) Validate() error {
	switch {
	case m.FileID <= 0:
		return errors.New("file_id must be positive")
	case m.RunID == "":
		return errors.New("run_id is required")
	}
	return nil
}

// StepTask asks a step actor to run step Position of run RunID.
type StepTask struct {
	RunID    string         `json:"run_id"`
	FileID   int64          `json:"file_id"`
	Position int            `json:"position"`
	StepType string         `json:"step_type"`
	Attempt  int            `json:"attempt"` // 1 for the first run
	Options  map[string]any `json:"options,omitempty"`
}

// EnvelopeType implements Payload.
func (StepTask) EnvelopeType() string { return TypeStepTask }

// Validate implements Payload.
func (m StepTask) Validate() error {
	switch {
	case m.RunID == "":
		return errors.New("run_id is required")
	case m.FileID <= 0:
		return errors.New("file_id must be positive")
	case m.Position < 0:
		return errors.New("position must not be negative")
	case m.StepType == "":
		return errors.New("step_type is required")
	case m.Attempt < 1:
		return errors.New("attempt must be at least 1")
	}
	return nil
}

// Event is a domain event on the events topic.
type Event docflow.Event

// EnvelopeType implements Payload.
func (Event) EnvelopeType() string { return TypeEvent }

// Validate implements Payload.
func (m Event) Validate() error {
	switch {
	case m.ID == "":
		return errors.New("event id is required")
	case m.Name == "":
		return errors.New("event name is required")
	case m.Timestamp.IsZero():
		return errors.New("event timestamp is required")
	}
	return nil
}

// Encode wraps p in an envelope of the current version. id must be unique
// per message (receivers deduplicate on it); ts is the time of the fact.
func Encode(id string, ts time.Time, p Payload) ([]byte, error) {
	if id == "" {
		return nil, fmt.Errorf("encode %s: empty id", p.EnvelopeType())
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("encode %s: %w", p.EnvelopeType(), err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", p.EnvelopeType(), err)
	}
	b, err := json.Marshal(Envelope{V: EnvelopeVersion, Type: p.EnvelopeType(), ID: id, TS: ts.UTC(), Data: data})
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", p.EnvelopeType(), err)
	}
	return b, nil
}

// DecodeEnvelope parses and checks the envelope, leaving Data undecoded.
// Every error is a *PoisonError: the bytes can never become a valid message.
func DecodeEnvelope(b []byte) (Envelope, error) {
	var env Envelope
	if err := strictUnmarshal(b, &env); err != nil {
		return env, poisonf("decode envelope: %v", err)
	}
	switch {
	case env.V < 1 || env.V > EnvelopeVersion:
		return env, poisonf("decode envelope: unsupported version %d", env.V)
	case env.Type == "":
		return env, poisonf("decode envelope: type is required")
	case env.ID == "":
		return env, poisonf("decode envelope: id is required")
	case env.TS.IsZero():
		return env, poisonf("decode envelope: ts is required")
	case len(env.Data) == 0 || bytes.Equal(env.Data, []byte("null")):
		return env, poisonf("decode envelope: data is required")
	}
	return env, nil
}

// Decode parses an envelope of p's type into p. Every error is a
// *PoisonError (wrong type, bad JSON, unknown fields, failed validation).
func Decode[T Payload](b []byte) (Envelope, T, error) {
	var p T
	env, err := DecodeEnvelope(b)
	if err != nil {
		return env, p, err
	}
	if env.Type != p.EnvelopeType() {
		return env, p, poisonf("decode %s: envelope type is %q", p.EnvelopeType(), env.Type)
	}
	if err := strictUnmarshal(env.Data, &p); err != nil {
		return env, p, poisonf("decode %s: %v", p.EnvelopeType(), err)
	}
	if err := p.Validate(); err != nil {
		return env, p, poisonf("decode %s: %v", p.EnvelopeType(), err)
	}
	return env, p, nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after JSON value")
	}
	return nil
}

// PoisonError marks a message that can never be processed (undecodable,
// invalid): the consumer dead-letters it at once instead of retrying.
type PoisonError struct {
	Reason string
	Err    error
}

func (e *PoisonError) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *PoisonError) Unwrap() error { return e.Err }

// Poison marks err as a poison error (nil stays nil).
func Poison(err error) error {
	if err == nil {
		return nil
	}
	return &PoisonError{Reason: "poison message", Err: err}
}

// IsPoison reports whether err (or an error it wraps) is a *PoisonError.
func IsPoison(err error) bool {
	var p *PoisonError
	return errors.As(err, &p)
}

func poisonf(format string, args ...any) error {
	return &PoisonError{Reason: fmt.Sprintf(format, args...)}
}
