package http

import "docflow"

// The response types of integrations, webhooks and automation hooks, and
// the documentation of their routes (/openapi.json).

// integrationQuota is the body of GET /api/integrations/quota/.
type integrationQuota struct {
	TierID       string     `json:"tier_id"`
	TierName     string     `json:"tier_name"`
	Destinations quotaCount `json:"destinations"`
	Sources      quotaCount `json:"sources"`
}

type integrationTest struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// deliveryLog is a page of a webhook's or hook's deliveries.
type deliveryLog struct {
	Deliveries []docflow.DeliveryLogEntry `json:"deliveries"`
	Total      int                        `json:"total"`
	Page       int                        `json:"page"`
	PerPage    int                        `json:"per_page"`
	Pages      int                        `json:"pages"`
}

type redeliveryQueued struct {
	Status     string `json:"status" example:"queued"`
	DeliveryID int64  `json:"delivery_id"`
}

var deliveryParams = []Param{
	{Name: "page", Type: "integer", Default: 1, Min: 1},
	{Name: "per_page", Type: "integer", Default: 50, Min: 1, Max: 200},
}

var webdavExample = map[string]any{"direction": "DESTINATION", "integration_type": "WEBDAV", "name": "Nextcloud archive",
	"config":      map[string]any{"url": "https://cloud.example.com/remote.php/dav/files/me/", "path": "Documents"},
	"credentials": map[string]any{"username": "me", "password": "app-password"}}

var (
	docListIntegrations = Doc{
		Summary: "List the caller's integrations",
		Params: []Param{{Name: "direction", Enum: []string{docflow.DirectionSource, docflow.DirectionDestination}},
			{Name: "integration_type", Doc: "Upper case: IMAP, WEBDAV, S3…"}},
		Responses: []Response{OK([]*docflow.Integration{})},
		Examples:  []Example{{Name: "destinations", Summary: "Storage destinations only", Params: map[string]string{"direction": "DESTINATION"}}},
	}
	docIntegrationQuota = Doc{
		Summary:     "How many integrations the caller's plan allows",
		Description: "max_allowed is null when unlimited.",
		Responses:   []Response{OK(integrationQuota{})},
		Examples:    []Example{{Name: "quota", Summary: "Used and allowed"}},
	}
	docGetIntegration = Doc{
		Summary:     "An integration",
		Description: "Credentials are never returned; has_credentials says whether some are stored.",
		Responses:   []Response{OK(docflow.Integration{})},
		Errors:      []int{404},
		Examples:    []Example{{Name: "get", Summary: "One integration", Params: map[string]string{"id": "5"}}},
	}
	docCreateIntegration = Doc{
		Summary: "Add an integration (a mail source or a storage destination)",
		Description: "config and credentials hold the type's own keys (docs/api.md, Integrations); credentials are stored " +
			"encrypted. 403 when the plan's quota is reached.",
		Body:      integrationBody{},
		Responses: []Response{Created(docflow.Integration{})},
		Errors:    []int{403, 409},
		Examples:  []Example{{Name: "webdav", Summary: "A Nextcloud folder as destination", Body: webdavExample}},
	}
	docUpdateIntegration = Doc{
		Summary: "Change an integration",
		Description: "Fields left out are unchanged; credentials left out are kept. A changed endpoint needs its credentials " +
			"again (they are not sent to a new host).",
		Body:      integrationBody{},
		Responses: []Response{OK(docflow.Integration{})},
		Errors:    []int{403, 404, 409},
		Examples: []Example{{Name: "pause", Summary: "Pause an integration", Params: map[string]string{"id": "5"},
			Body: map[string]any{"is_active": false}}},
	}
	docDeleteIntegration = Doc{
		Summary:   "Delete an integration",
		Responses: []Response{NoContent()},
		Errors:    []int{404},
		Examples:  []Example{{Name: "delete", Summary: "Delete", Params: map[string]string{"id": "5"}}},
	}
	docTestIntegration = Doc{
		Summary: "Test an integration's connection",
		Description: "Tests the body's settings, or with integration_id a stored integration with the body's changes applied " +
			"unsaved. The answer says whether it worked; a failure is not an HTTP error.",
		Body:      integrationBody{},
		Responses: []Response{OK(integrationTest{})},
		Errors:    []int{404},
	}

	docWebhookEvents = Doc{
		Summary:   "The events webhooks can receive",
		Responses: []Response{OK([]string{})},
		Examples:  []Example{{Name: "events", Summary: "document.processed, …"}},
	}
	docListWebhooks = Doc{
		Summary:   "List webhooks",
		Responses: []Response{OK([]*docflow.Webhook{})},
		Examples:  []Example{{Name: "list", Summary: "Every webhook"}},
	}
	docCreateWebhook = Doc{
		Summary: "Create a webhook",
		Description: "Events are POSTed as {event, timestamp, data} to url; with a secret, X-Webhook-Signature carries " +
			"sha256=HMAC-SHA256(secret, body). Failed deliveries are retried after 60 s, 300 s and 900 s (±20 %). " +
			"url must be a public http(s) address (or a host of WEBHOOK_ALLOWED_HOSTS).",
		Body:      webhookReq{},
		Responses: []Response{Created(docflow.Webhook{})},
		Examples: []Example{{Name: "processed", Summary: "Hear of processed documents",
			Body: map[string]any{"url": "https://hooks.example.com/docflow", "events": []string{"document.processed", "document.failed"},
				"secret": "a-long-random-secret", "description": "Bookkeeping"}}},
	}
	docGetWebhook = Doc{
		Summary:   "A webhook",
		Responses: []Response{OK(docflow.Webhook{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "get", Summary: "One webhook", Params: map[string]string{"webhook_id": "8"}}},
	}
	docUpdateWebhook = Doc{
		Summary:   "Change a webhook",
		Body:      webhookReq{},
		Responses: []Response{OK(docflow.Webhook{})},
		Errors:    []int{404},
		Examples: []Example{{Name: "pause", Summary: "Pause deliveries", Params: map[string]string{"webhook_id": "8"},
			Body: map[string]any{"is_active": false}}},
	}
	docDeleteWebhook = Doc{
		Summary:   "Delete a webhook",
		Responses: []Response{NoContent()},
		Errors:    []int{404},
		Examples:  []Example{{Name: "delete", Summary: "Delete", Params: map[string]string{"webhook_id": "8"}}},
	}
	docWebhookDeliveries = Doc{
		Summary:   "A webhook's delivery log",
		Params:    deliveryParams,
		Responses: []Response{OK(deliveryLog{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "log", Summary: "The newest deliveries", Params: map[string]string{"webhook_id": "8"}}},
	}
	docRedeliver = Doc{
		Summary:   "Send a delivery again",
		NoBody:    true,
		Responses: []Response{{Status: 202, Body: redeliveryQueued{}, Doc: "Queued"}},
		Errors:    []int{404},
	}

	docHookEvents = Doc{
		Summary:   "The events automation hooks can subscribe to",
		Responses: []Response{OK([]string{})},
		Examples:  []Example{{Name: "events", Summary: "The event names"}},
	}
	docSubscribeHook = Doc{
		Summary: "Subscribe an automation platform (Zapier, Make, n8n) to events",
		Description: "Events are POSTed flat ({id, event, timestamp, document_id, filename, status, title, owner_id}) to " +
			"target_url, signed and retried as webhooks are.",
		Body:      hookReq{},
		Responses: []Response{Created(docflow.AutomationHook{})},
		Examples: []Example{{Name: "zap", Summary: "A Zap's trigger",
			Body: map[string]any{"target_url": "https://hooks.example.com/zap/123", "events": []string{"document.processed"}, "hook_type": "zapier"}}},
	}
	docListHooks = Doc{
		Summary:   "List the caller's automation hooks",
		Responses: []Response{OK([]*docflow.AutomationHook{})},
		Examples:  []Example{{Name: "list", Summary: "Every hook of the token's owner"}},
	}
	docGetHook = Doc{
		Summary:   "An automation hook",
		Responses: []Response{OK(docflow.AutomationHook{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "get", Summary: "One hook", Params: map[string]string{"hook_id": "6"}}},
	}
	docUpdateHook = Doc{
		Summary:   "Change an automation hook",
		Body:      hookReq{},
		Responses: []Response{OK(docflow.AutomationHook{})},
		Errors:    []int{404},
		Examples: []Example{{Name: "pause", Summary: "Pause", Params: map[string]string{"hook_id": "6"},
			Body: map[string]any{"is_active": false}}},
	}
	docDeleteHook = Doc{
		Summary:   "Unsubscribe an automation hook",
		Responses: []Response{NoContent()},
		Errors:    []int{404},
		Examples:  []Example{{Name: "delete", Summary: "Unsubscribe", Params: map[string]string{"hook_id": "6"}}},
	}
	docHookDeliveries = Doc{
		Summary:   "An automation hook's delivery log",
		Params:    deliveryParams,
		Responses: []Response{OK(deliveryLog{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "log", Summary: "The newest deliveries", Params: map[string]string{"hook_id": "6"}}},
	}
	docHookSample = Doc{
		Summary:     "A sample payload of an event",
		Description: "An array with one payload in the flat format hooks receive, for setting up a trigger.",
		Params:      []Param{{Name: "event", In: "path", Enum: docflow.EventNames}},
		Responses:   []Response{OK([]map[string]any{})},
		Errors:      []int{404},
		Examples:    []Example{{Name: "processed", Summary: "document.processed", Params: map[string]string{"event": "document.processed"}}},
	}
)
