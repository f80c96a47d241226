package delivery

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

// ErrPrivateAddress refuses a receiver on a private or internal address
// that WEBHOOK_ALLOWED_HOSTS does not admit.
var ErrPrivateAddress = netguard.ErrPrivate

// WebhookSender POSTs events to webhooks: the body {data, event,
// timestamp} with sorted keys, signed as sent. Every connection is checked
// when it is made: a receiver (or a DNS answer) on a private or internal
// address is refused unless WEBHOOK_ALLOWED_HOSTS admits its host on that
// port (an entry host admits every port, host:port that port only).
// Redirects are never followed: a 3xx is a failed attempt (a receiver
// cannot bounce a signed request to another address). A failed
// connection is recorded in fixed words (netguard.Describe), never with
// text the receiver sent.
type WebhookSender struct {
	settings docflow.SettingsStore
	client   *http.Client
	// body builds a delivery's body (WebhookBody, or HookBody for
	// automation hooks); agent is the User-Agent.
	body  func(docflow.Event) ([]byte, error)
	agent string
	// goneUnsubscribes: a 410 Gone asks for the subscriber's removal
	// (automation hooks, the REST-hooks convention).
	goneUnsubscribes bool
}

// NewWebhookSender builds the sender; settings gives WEBHOOK_ALLOWED_HOSTS
// (read at each connection).
func NewWebhookSender(settings docflow.SettingsStore) *WebhookSender {
	w := &WebhookSender{settings: settings, body: WebhookBody, agent: "docflow-webhooks"}
	w.client = guardedClient(settings)
	return w
}

// guardedClient is an HTTP client that checks every connection when it
// is made (netguard.Dialer): a host on a private or internal address
// (literal or resolved) is refused unless WEBHOOK_ALLOWED_HOSTS admits it
// on the connection's port. No proxy, no redirects followed; the
// attempt's context bounds each request.
func guardedClient(settings docflow.SettingsStore) *http.Client {
	dialer := netguard.Dialer{Timeout: 10 * time.Second,
		Allowed: func() []string { return docflow.WebhookAllowedHosts.Get(settings) }}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256, // a burst to one receiver reuses its connections
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // the attempt's context bounds it all
	}
	return &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// WebhookBody is the body of a webhook delivery: {data, event, timestamp}
// with sorted keys (timestamp in Unix seconds with a fraction), the same
// bytes on every attempt.
func WebhookBody(ev docflow.Event) ([]byte, error) {
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

// Send POSTs d's event to t.URL.
func (w *WebhookSender) Send(ctx context.Context, t docflow.DeliveryTarget, d *docflow.EventDelivery) Result {
	body, err := w.body(d.Event)
	if err != nil {
		return Result{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return Result{Err: err}
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
		return Result{Err: netguard.Public(err)}
	}
	defer resp.Body.Close()
	// Read a bounded amount (so a keep-alive connection can be reused when
	// the answer is short); the rest is dropped with the connection.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBody))
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return Result{StatusCode: resp.StatusCode,
			Err: fmt.Errorf("receiver answered %d (redirects are not followed)", resp.StatusCode)}
	}
	if resp.StatusCode == http.StatusGone && w.goneUnsubscribes {
		return Result{StatusCode: resp.StatusCode, Unsubscribe: true}
	}
	return Result{StatusCode: resp.StatusCode}
}
