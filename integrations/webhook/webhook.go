// Package webhook is the client of webhook and automation hook receivers:
// a signed POST of an event, under the rule that keeps receivers off the
// service's own network (internal/netguard with WEBHOOK_ALLOWED_HOSTS).
// actors/delivery decides when and to whom; this package makes one
// attempt.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"docflow"
	"docflow/internal/netguard"
)

// MaxResponseBody is how much of a receiver's answer is read: the status
// is what counts, and a receiver answering gigabytes must not hold a
// worker.
const MaxResponseBody = 64 << 10

// Sender POSTs events to webhooks: the body {data, event, timestamp}
// with sorted keys, signed as sent. Every connection is checked when it
// is made: a receiver (or a DNS answer) on a private or internal address
// is refused unless WEBHOOK_ALLOWED_HOSTS admits its host on that port
// (an entry host admits every port, host:port that port only). Redirects
// are never followed: a 3xx is a failed attempt (a receiver cannot bounce
// a signed request to another address). A failed connection is recorded
// in fixed words (netguard.Describe), never with text the receiver sent.
type Sender struct {
	client *http.Client
	// body builds a delivery's body (Body, or HookBody for automation
	// hooks); agent is the User-Agent.
	body  func(docflow.Event) ([]byte, error)
	agent string
	// goneUnsubscribes: a 410 Gone asks for the subscriber's removal
	// (automation hooks, the REST-hooks convention).
	goneUnsubscribes bool
}

// NewSender builds the sender of webhooks; settings gives
// WEBHOOK_ALLOWED_HOSTS (read at each connection).
func NewSender(settings docflow.SettingsStore) *Sender {
	return &Sender{client: Client(settings), body: Body, agent: "docflow-webhooks"}
}

// NewHookSender builds the sender of automation hooks: the same client,
// address checks, headers and signatures as webhooks, the flat body of
// HookBody, and a 410 Gone that unsubscribes the hook.
func NewHookSender(settings docflow.SettingsStore) *Sender {
	return &Sender{client: Client(settings), body: HookBody, agent: "docflow-hooks", goneUnsubscribes: true}
}

// Client is the HTTP client of events going out (webhooks, hooks, the
// push relay): every connection checked when it is made (netguard), a
// host on a private or internal address (literal or resolved) refused
// unless WEBHOOK_ALLOWED_HOSTS admits it on the connection's port; no
// proxy, no redirects followed; the attempt's context bounds each
// request. A burst to one receiver reuses its connections.
func Client(settings docflow.SettingsStore) *http.Client {
	return netguard.Client(netguard.ClientOptions{MaxIdleConnsPerHost: 256, Dialer: netguard.Dialer{
		Timeout: 10 * time.Second,
		Allowed: func() []string { return docflow.WebhookAllowedHosts.Get(settings) }}})
}

// Body is the body of a webhook delivery: {data, event, timestamp} with
// sorted keys (timestamp in Unix seconds with a fraction), the same bytes
// on every attempt.
func Body(ev docflow.Event) ([]byte, error) {
	data := make(map[string]any, len(ev.Data)+1)
	for k, v := range ev.Data {
		data[k] = v
	}
	if _, ok := data["owner_id"]; !ok && ev.OwnerID != nil {
		data["owner_id"] = *ev.OwnerID
	}
	ts := float64(ev.Timestamp.UnixMicro()) / 1e6
	// encoding/json writes map keys sorted, at every level.
	return json.Marshal(map[string]any{"event": ev.Name, "timestamp": ts, "data": data})
}

// HookBody is the body of an automation hook delivery:
// docflow.HookPayload with sorted keys, the same bytes on every attempt.
func HookBody(ev docflow.Event) ([]byte, error) {
	return json.Marshal(docflow.HookPayload(ev))
}

// SignHex is the X-Webhook-Signature value of body: "sha256=" and the hex
// HMAC-SHA256 of the raw body with the secret.
func SignHex(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// SignStandard is the Standard Webhooks webhook-signature value: "v1," and
// the base64 HMAC-SHA256 of "id.timestamp.body" with the secret's bytes.
func SignStandard(secret, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Send POSTs d's event to t.URL: one attempt, bounded by ctx.
func (w *Sender) Send(ctx context.Context, t docflow.DeliveryTarget, d *docflow.EventDelivery) docflow.DeliveryResult {
	body, err := w.body(d.Event)
	if err != nil {
		return docflow.DeliveryResult{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return docflow.DeliveryResult{Err: err}
	}
	now := time.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.agent)
	req.Header.Set("X-Webhook-Event", d.Event.Name)
	req.Header.Set("webhook-id", d.EventID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now, 10))
	if t.Secret != "" {
		req.Header.Set("X-Webhook-Signature", SignHex(t.Secret, body))
		req.Header.Set("webhook-signature", SignStandard(t.Secret, d.EventID, now, body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return docflow.DeliveryResult{Err: netguard.Public(err)}
	}
	defer resp.Body.Close()
	// Read a bounded amount (so a keep-alive connection can be reused when
	// the answer is short); the rest is dropped with the connection.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBody))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return docflow.DeliveryResult{StatusCode: resp.StatusCode,
			Err: fmt.Errorf("receiver answered %d (redirects are not followed)", resp.StatusCode)}
	}
	if resp.StatusCode == http.StatusGone && w.goneUnsubscribes {
		return docflow.DeliveryResult{StatusCode: resp.StatusCode, Unsubscribe: true}
	}
	return docflow.DeliveryResult{StatusCode: resp.StatusCode}
}
