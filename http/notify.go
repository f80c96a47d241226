package http

import (
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// NotificationsDeps is what the test-notification endpoint needs.
type NotificationsDeps struct {
	Notifier docflow.Notifier
}

// MountNotifications registers POST /api/diagnostic/test-notification
// (admin): a test notification through every channel of
// NOTIFICATION_URLS, answered 200 with {status, message, services_count,
// results} whatever the channels did (the outcome is in status:
// success, partial or failed). Admin only: it makes docflow send to
// every configured channel.
func (s *Server) MountNotifications(d NotificationsDeps) {
	if d.Notifier == nil {
		panic("http: MountNotifications needs a Notifier")
	}
	// The channels run at once, each bounded by WEBHOOK_TIMEOUT; the
	// request's own bound leaves room for the slowest.
	h := &notifyHandlers{d: d}
	s.Handle("POST", "/api/diagnostic/test-notification", Route{Auth: AuthAdmin, Timeout: 90 * time.Second}, h.test, docTestNotification)
}

type notifyHandlers struct {
	d NotificationsDeps
}

func (h *notifyHandlers) test(c *fasthttp.RequestCtx) error {
	who := "an administrator"
	if u := CurrentUser(c); u != nil && u.ID != "" {
		who = u.ID
	}
	rep := h.d.Notifier.Notify(RequestContext(c), docflow.Notification{
		Title: "docflow test notification",
		Body:  "This is a test notification from docflow, sent by " + who + ". If you read this, the channel works.",
	})
	writeJSON(c, fasthttp.StatusOK, rep)
	return nil
}
