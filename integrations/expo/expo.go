// Package expo is the client of the Expo push service, which the mobile
// app's push tokens belong to: one message per attempt, under the rule
// that keeps events going out off the service's own network
// (internal/netguard with WEBHOOK_ALLOWED_HOSTS). actors/delivery decides
// when and to which device; this package makes one attempt.
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

// maxResponseBody is how much of the relay's answer is read.
const maxResponseBody = 64 << 10

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
// at PUSH_RELAY_URL (read at each attempt): a POST of a JSON array of one
// message, {to, title, body, data: {file_id}}. The relay's connections
// follow the webhooks' rule: a private or internal address is refused
// unless WEBHOOK_ALLOWED_HOSTS admits its host and port; no redirects are
// followed. A ticket with DeviceNotRegistered deactivates the device and
// ends the delivery without a retry (Final); any other error, a non-2xx
// answer or a network error is retried like a webhook's.
type Sender struct {
	settings docflow.SettingsStore
	devices  DeviceDeactivator
	client   *http.Client
}

// NewSender builds the sender.
func NewSender(settings docflow.SettingsStore, devices DeviceDeactivator) *Sender {
	return &Sender{settings: settings, devices: devices,
		client: netguard.Client(netguard.ClientOptions{MaxIdleConnsPerHost: 256, Dialer: netguard.Dialer{
			Timeout: 10 * time.Second,
			Allowed: func() []string { return docflow.WebhookAllowedHosts.Get(settings) }}})}
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

// Send pushes d's event to the device t: one attempt, bounded by ctx.
func (p *Sender) Send(ctx context.Context, t docflow.DeliveryTarget, d *docflow.EventDelivery) docflow.DeliveryResult {
	url := docflow.PushRelayURL.Get(p.settings)
	if url == "" {
		// The default is the Expo push service, which the mobile app's
		// push tokens belong to.
		url = docflow.PushRelayURL.Default()
	}
	body, err := json.Marshal([]Message{MessageFor(t.PushToken, d.Event)})
	if err != nil {
		return docflow.DeliveryResult{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return docflow.DeliveryResult{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "docflow-push")
	// Accept-Encoding: gzip is added by the transport, which also
	// decompresses the answer.
	resp, err := p.client.Do(req)
	if err != nil {
		return docflow.DeliveryResult{Err: netguard.Public(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody))
	if err != nil {
		return docflow.DeliveryResult{StatusCode: resp.StatusCode, Err: fmt.Errorf("read relay answer: %w", err)}
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
		return docflow.DeliveryResult{StatusCode: resp.StatusCode, Err: errors.New(msg)}
	}
	tk, err := firstTicket(out.Data)
	if err != nil {
		return docflow.DeliveryResult{StatusCode: resp.StatusCode, Err: err}
	}
	if tk.Status == "ok" {
		return docflow.DeliveryResult{StatusCode: resp.StatusCode}
	}
	if tk.Details.Error == DeviceNotRegistered {
		if err := p.devices.DeactivateDevice(ctx, d.Subscriber.ID); err != nil {
			return docflow.DeliveryResult{StatusCode: resp.StatusCode,
				Err: fmt.Errorf("%s; deactivate device: %w", DeviceNotRegistered, err)}
		}
		return docflow.DeliveryResult{StatusCode: resp.StatusCode, Final: true,
			Err: errors.New(DeviceNotRegistered + ": device deactivated")}
	}
	return docflow.DeliveryResult{StatusCode: resp.StatusCode,
		Err: fmt.Errorf("relay refused the message: %s %s", tk.Details.Error, tk.Message)}
}

// firstTicket reads the ticket of the request's one message: Expo answers
// an array request with an array of tickets (an object for an object).
func firstTicket(data json.RawMessage) (ticket, error) {
	var tks []ticket
	if err := json.Unmarshal(data, &tks); err == nil && len(tks) > 0 {
		return tks[0], nil
	}
	var tk ticket
	if err := json.Unmarshal(data, &tk); err == nil && tk.Status != "" {
		return tk, nil
	}
	return ticket{}, errors.New("relay answer holds no push ticket")
}
