package delivery

import (
	"encoding/json"

	"docflow"
)

// NewHookSender builds the sender of automation hooks: the same client,
// address checks, headers and signatures as webhooks (WebhookSender), the
// flat body of HookBody, and a 410 Gone that unsubscribes the hook.
func NewHookSender(settings docflow.SettingsStore) *WebhookSender {
	w := NewWebhookSender(settings)
	w.body, w.agent, w.goneUnsubscribes = HookBody, "docflow-hooks", true
	return w
}

// HookBody is the body of an automation hook delivery: docflow.HookPayload
// with sorted keys, the same bytes on every attempt.
func HookBody(ev docflow.Event) ([]byte, error) {
	return json.Marshal(docflow.HookPayload(ev))
}
