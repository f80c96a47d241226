package docflow

import "context"

// Notification is one admin notification: a short title and a plain-text
// body, sent through every channel of NOTIFICATION_URLS.
type Notification struct {
	Title string
	Body  string
}

// NotificationResult is one channel's outcome. Service names the channel
// with its secrets redacted; Detail says why it failed (or what it did).
type NotificationResult struct {
	Service string `json:"service"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`
	// Invalid marks an entry that could not be parsed: sending again
	// cannot help it.
	Invalid bool `json:"-"`
}

// Outcomes of a notification through all channels.
const (
	NotifySuccess = "success" // every channel took it
	NotifyPartial = "partial" // some did
	NotifyFailed  = "failed"  // none did, or no channel is configured
)

// NotificationReport is the answer of POST
// /api/diagnostic/test-notification: one result per NOTIFICATION_URLS
// entry, invalid entries included.
type NotificationReport struct {
	Status        string               `json:"status"`
	Message       string               `json:"message"`
	ServicesCount int                  `json:"services_count"`
	Results       []NotificationResult `json:"results"`
}

// Notifier sends admin notifications through the configured channels
// (read at each call) and reports each channel's outcome.
type Notifier interface {
	Notify(ctx context.Context, n Notification) NotificationReport
}
