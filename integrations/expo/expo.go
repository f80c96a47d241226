// Package expo is the client of the Expo push service, which the mobile
// app's push tokens belong to, under the rule that keeps events going out
// off the service's own network (internal/netguard with
// WEBHOOK_ALLOWED_HOSTS). actors/delivery decides when and to which
// device; this package makes one attempt per message, the attempts made
// at the same time sharing requests of up to 100 messages (batch.go).
package expo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"docflow"
	"docflow/internal/netguard"
)

// DeviceNotRegistered is the ticket error with which the relay reports a
// token no longer valid (the app was uninstalled or its notifications
// turned off).
const DeviceNotRegistered = "DeviceNotRegistered"

// maxResponseBody is how much of the relay's answer is read: the tickets
// of a request of 100 messages take a few KiB.
const maxResponseBody = 256 << 10

// DeviceDeactivator deactivates a device the relay reported unregistered
// (postgres.DeviceStore).
type DeviceDeactivator interface {
	DeactivateDevice(ctx context.Context, id int64) error
}

// Message is one message of a relay request (Expo's push API).
type Message struct {
	To    string         `json:"to"`
	Title string         `json:"title"`
	Body  string         `json:"body"`
	Data  map[string]any `json:"data"`
}

// ticket is the relay's answer for one message.
type ticket struct {
	Status  string `json:"status"` // ok or error
	ID      string `json:"id"`
	Message string `json:"message"`
	Details struct {
		Error string `json:"error"`
	} `json:"details"`
}

// Sender delivers document.processed to a device through the push relay
// at PUSH_RELAY_URL (read at each request): a POST of a JSON array of
// messages, {to, title, body, data: {file_id}}, up to 100 of them, the
// messages of the attempts under way at once (the relay answers a ticket
// per message, in order, and each attempt's outcome is its own message's
// ticket), at most 6 requests at a time. The relay's connections
// follow the webhooks' rule: a private or internal address is refused
// unless WEBHOOK_ALLOWED_HOSTS admits its host and port; no redirects are
// followed. A ticket with DeviceNotRegistered deactivates the device and
// ends the delivery without a retry (Final); any other error, a non-2xx
// answer or a network error is retried like a webhook's.
type Sender struct {
	settings docflow.SettingsStore
	devices  DeviceDeactivator
	client   *http.Client
	batch    *batcher
}

// NewSender builds the sender.
func NewSender(settings docflow.SettingsStore, devices DeviceDeactivator) *Sender {
	p := &Sender{settings: settings, devices: devices,
		client: netguard.Client(netguard.ClientOptions{MaxIdleConnsPerHost: maxRequests, Dialer: netguard.Dialer{
			Timeout: 10 * time.Second,
			Allowed: func() []string { return docflow.WebhookAllowedHosts.Get(settings) }}})}
	p.batch = &batcher{post: p.post}
	return p
}

// MessageFor is the message telling a device that ev's document finished
// processing: its name (at most 100 characters) and data {file_id}, no
// more of the document.
func MessageFor(token string, ev docflow.Event) Message {
	name, _ := ev.Data["filename"].(string)
	if utf8.RuneCountInString(name) > 100 {
		name = string([]rune(name)[:99]) + "…"
	}
	body := "Your document is ready."
	if name != "" {
		body = name + " is ready."
	}
	return Message{To: token, Title: "Document processed", Body: body,
		Data: map[string]any{"file_id": ev.Data["file_id"]}}
}

// Send pushes d's event to the device t: one attempt, bounded by ctx, its
// message sent in a request with the others under way.
func (p *Sender) Send(ctx context.Context, t docflow.DeliveryTarget, d *docflow.EventDelivery) docflow.DeliveryResult {
	o := p.batch.send(ctx, MessageFor(t.PushToken, d.Event))
	if o.err != nil {
		return docflow.DeliveryResult{StatusCode: o.status, Err: o.err}
	}
	tk := o.tk
	if tk.Status == "ok" {
		return docflow.DeliveryResult{StatusCode: o.status}
	}
	if tk.Details.Error == DeviceNotRegistered {
		if err := p.devices.DeactivateDevice(ctx, d.Subscriber.ID); err != nil {
			return docflow.DeliveryResult{StatusCode: o.status,
				Err: fmt.Errorf("%s; deactivate device: %w", DeviceNotRegistered, err)}
		}
		return docflow.DeliveryResult{StatusCode: o.status, Final: true,
			Err: errors.New(DeviceNotRegistered + ": device deactivated")}
	}
	return docflow.DeliveryResult{StatusCode: o.status,
		Err: fmt.Errorf("relay refused the message: %s %s", tk.Details.Error, tk.Message)}
}

// post makes one request of msgs under WEBHOOK_TIMEOUT and returns the
// answer's status and its tickets, or the request's error (a network
// error, a non-2xx answer, an answer without tickets).
func (p *Sender) post(msgs []Message) (int, []ticket, error) {
	ctx, cancel := context.WithTimeout(context.Background(), docflow.WebhookTimeout.Get(p.settings))
	defer cancel()
	url := docflow.PushRelayURL.Get(p.settings)
	if url == "" {
		// The default is the Expo push service, which the mobile app's
		// push tokens belong to.
		url = docflow.PushRelayURL.Default()
	}
	body, err := json.Marshal(msgs)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "docflow-push")
	// Accept-Encoding: gzip is added by the transport, which also
	// decompresses the answer.
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, netguard.Public(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read relay answer: %w", err)
	}
	var out struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(raw, &out)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := fmt.Sprintf("relay answered %d", resp.StatusCode)
		if len(out.Errors) > 0 {
			msg += ": " + out.Errors[0].Code + " " + out.Errors[0].Message
		}
		return resp.StatusCode, nil, errors.New(msg)
	}
	tks, err := tickets(out.Data, len(msgs))
	return resp.StatusCode, tks, err
}
