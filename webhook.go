package docflow

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Subscriber kinds: who an event is delivered to. A delivery is recorded
// once per (event id, subscriber), the subscriber written "<kind>:<id>"
// ("admin" alone for the admin channels). Webhooks, automation hooks and
// devices (push notifications) are delivered today; the admin channels
// plug into the same delivery core with a sender of their own.
const (
	SubscriberWebhook = "webhook"
	SubscriberHook    = "hook"
	SubscriberDevice  = "device"
	SubscriberAdmin   = "admin"
)

// Subscriber names one receiver of events.
type Subscriber struct {
	Kind string
	ID   int64
}

// String is the form stored with a delivery: "webhook:12".
func (s Subscriber) String() string {
	if s.Kind == SubscriberAdmin {
		return s.Kind
	}
	return s.Kind + ":" + strconv.FormatInt(s.ID, 10)
}

// ParseSubscriber reads the stored form of a subscriber.
func ParseSubscriber(v string) (Subscriber, error) {
	if v == SubscriberAdmin {
		return Subscriber{Kind: v}, nil
	}
	kind, id, ok := strings.Cut(v, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil || kind == "" {
		return Subscriber{}, Errorf(EINVALID, "subscriber %q is not <kind>:<id>", v)
	}
	return Subscriber{Kind: kind, ID: n}, nil
}

// IsDeliverable reports whether name is an event delivered outside
// (EventNames); internal events (file.updated, file.deleted) are not.
func IsDeliverable(name string) bool { return slices.Contains(EventNames, name) }

// Webhook is an admin-configured receiver of events. Secret is input
// only: it is never returned, HasSecret tells whether one is set.
type Webhook struct {
	ID          int64     `json:"id"`
	URL         string    `json:"url"`
	Secret      string    `json:"-"`
	HasSecret   bool      `json:"has_secret"`
	Events      []string  `json:"events"`
	IsActive    bool      `json:"is_active"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// FailingSince is when the first of the deliveries failing since the
	// last success failed; Failing is set once that is 24 h ago (every
	// delivery failed for a day). A failing webhook is flagged, never
	// disabled.
	FailingSince *time.Time `json:"failing_since"`
	Failing      bool       `json:"failing"`
}

// WebhookFailingAfter is how long every delivery of a webhook must have
// failed before the webhook is flagged failing.
const WebhookFailingAfter = 24 * time.Hour

// Delivery states.
const (
	DeliveryPending   = "pending"   // an attempt is due or under way
	DeliveryDelivered = "delivered" // a receiver answered 2xx
	DeliveryFailed    = "failed"    // given up after the last retry
	DeliveryDropped   = "dropped"   // the subscriber was deleted or deactivated first
)

// EventDelivery is one event's delivery to one subscriber. Event is the event
// as it was on the events topic: every attempt sends the same body.
type EventDelivery struct {
	ID         int64
	EventID    string
	Event      Event
	Subscriber Subscriber
	Status     string
	Attempts   int // attempts made so far
	// NextAttempt is when its retry or postponement is due (zero: none
	// waits).
	NextAttempt time.Time
}

// DeliveryTarget is where a delivery goes, read at each attempt: a
// subscriber changed or deleted since the event applies at once.
type DeliveryTarget struct {
	Found  bool // false: the subscriber was deleted
	Active bool
	URL    string
	Secret string // plain, for signing
	// PushToken is a device's push token (devices only).
	PushToken string
	Events    []string
}

// DeliveryResult is what a sender (a webhook, an automation hook, a push
// relay, the admin channels) reports of one attempt: a 2xx StatusCode
// with a nil Err is a delivery; anything else is retried, unless Final or
// Unsubscribe.
type DeliveryResult struct {
	StatusCode int // 0: no response
	Err        error
	// Final ends a failed delivery without a retry (the receiver is gone
	// for good: a push token the relay reports unregistered).
	Final bool
	// Unsubscribe ends the subscription: an automation hook's receiver
	// answered 410 Gone, so the delivery fails at once and the subscriber
	// is deleted with the attempt.
	Unsubscribe bool
}

// DeliveryAttempt is the outcome of one attempt.
type DeliveryAttempt struct {
	DeliveryID int64
	Attempt    int
	StatusCode int // 0: no response
	Duration   time.Duration
	Error      string
	At         time.Time
	// Status is the delivery's state after the attempt; NextAttemptAt is
	// when the next one is due (pending only).
	Status        string
	NextAttemptAt *time.Time
	// Unsubscribe: the receiver asked to be unsubscribed (an automation
	// hook answering 410 Gone); the subscriber is deleted with the attempt.
	Unsubscribe bool
}

// DeliveryLogEntry is one delivery in a webhook's delivery log, with the
// outcome of its latest attempt.
type DeliveryLogEntry struct {
	ID            int64      `json:"id"`
	EventID       string     `json:"event_id"`
	Event         string     `json:"event"`
	Status        string     `json:"status"`
	Attempt       int        `json:"attempt"`
	StatusCode    *int       `json:"status_code"`
	DurationMS    *int64     `json:"duration_ms"`
	Error         *string    `json:"error"`
	DeliveredAt   *time.Time `json:"delivered_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	CreatedAt     time.Time  `json:"created_at"`
	// Attempts lists every attempt, oldest first.
	Attempts []DeliveryAttemptEntry `json:"attempts"`
}

// DeliveryAttemptEntry is one recorded attempt.
type DeliveryAttemptEntry struct {
	Attempt       int        `json:"attempt"`
	StatusCode    *int       `json:"status_code"`
	DurationMS    int64      `json:"duration_ms"`
	Error         *string    `json:"error"`
	AttemptedAt   time.Time  `json:"attempted_at"`
	NextAttemptAt *time.Time `json:"next_attempt_at"`
}

// WebhookPatch is a partial update of a webhook (nil: unchanged). An
// empty Secret removes the secret.
type WebhookPatch struct {
	URL         *string
	Secret      *string
	Events      *[]string
	IsActive    *bool
	Description *string
}

// WebhookStore stores webhooks and their delivery log.
type WebhookStore interface {
	FindWebhooks(ctx context.Context) ([]*Webhook, error)
	FindWebhook(ctx context.Context, id int64) (*Webhook, error)
	CreateWebhook(ctx context.Context, w *Webhook) error
	UpdateWebhook(ctx context.Context, id int64, p WebhookPatch) (*Webhook, error)
	DeleteWebhook(ctx context.Context, id int64) error
	// ListDeliveries pages the webhook's deliveries, newest first.
	ListDeliveries(ctx context.Context, webhookID int64, page, perPage int) ([]DeliveryLogEntry, int, error)
	// Redeliver makes delivery deliveryID of the webhook pending again and
	// queues an attempt now (ENOTFOUND when it is not the webhook's).
	Redeliver(ctx context.Context, webhookID, deliveryID int64) error
}

// Audit actions of the webhooks API.
const (
	AuditWebhookCreate    = "webhook.create"
	AuditWebhookUpdate    = "webhook.update"
	AuditWebhookDelete    = "webhook.delete"
	AuditWebhookRedeliver = "webhook.redeliver"
)
