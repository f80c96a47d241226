package delivery

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"docflow"
	"docflow/internal/netguard"
)

// DeviceNotRegistered is the ticket error with which the relay reports a
// token no longer valid (the app was uninstalled or its notifications
// turned off).
const DeviceNotRegistered = "DeviceNotRegistered"

// DeviceDeactivator deactivates a device the relay reported unregistered
// (postgres.DeviceStore).
type DeviceDeactivator interface {
	DeactivateDevice(ctx context.Context, id int64) error
}

// PushMessage is one message of a relay request (Expo's push API).
type PushMessage struct {
	To    string         `json:"to"`
	Title string         `json:"title"`
	Body  string         `json:"body"`
	Data  map[string]any `json:"data"`
}

// pushTicket is the relay's answer for one message.
type pushTicket struct {
	Status  string `json:"status"` // ok or error
	ID      string `json:"id"`
	Message string `json:"message"`
	Details struct {
		Error string `json:"error"`
	} `json:"details"`
}

// PushSender delivers document.processed to a device through the push
// relay at PUSH_RELAY_URL (read at each attempt): a POST of a JSON array
// of one message, {to, title, body, data: {file_id}}. The relay's
// connections follow the webhooks' rule: a private or internal address is
// refused unless WEBHOOK_ALLOWED_HOSTS admits its host and port. A ticket with
// DeviceNotRegistered deactivates the device and ends the delivery
// without a retry; any other error, a non-2xx answer or a network error
// is retried like a webhook's.
type PushSender struct {
	settings docflow.SettingsStore
	devices  DeviceDeactivator
	client   *http.Client
}

// NewPushSender builds the sender.
func NewPushSender(settings docflow.SettingsStore, devices DeviceDeactivator) *PushSender {
	p := &PushSender{settings: settings, devices: devices}
	p.client = guardedClient(settings)
	return p
}

// PushFor is the message telling a device that ev's document finished
// processing: its name (at most 100 characters) and data {file_id}, no
// more of the document.
func PushFor(token string, ev docflow.Event) PushMessage {
	name, _ := ev.Data["filename"].(string)
	if utf8.RuneCountInString(name) > 100 {
		name = string([]rune(name)[:99]) + "…"
	}
	body := "Your document is ready."
	if name != "" {
		body = name + " is ready."
	}
	return PushMessage{To: token, Title: "Document processed", Body: body,
		Data: map[string]any{"file_id": ev.Data["file_id"]}}
}

// Send pushes d's event to the device t.
func (p *PushSender) Send(ctx context.Context, t docflow.DeliveryTarget, d *docflow.EventDelivery) Result {
	url := docflow.PushRelayURL.Get(p.settings)
	if url == "" {
		// The default is the Expo push service, which the mobile app's
		// push tokens belong to.
		url = docflow.PushRelayURL.Default()
	}
	body, err := json.Marshal([]PushMessage{PushFor(t.PushToken, d.Event)})
	if err != nil {
		return Result{Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "docflow-push")
	// Accept-Encoding: gzip is added by the transport, which also
	// decompresses the answer.
	resp, err := p.client.Do(req)
	if err != nil {
		return Result{Err: netguard.Public(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	if err != nil {
		return Result{StatusCode: resp.StatusCode, Err: fmt.Errorf("read relay answer: %w", err)}
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
		return Result{StatusCode: resp.StatusCode, Err: errors.New(msg)}
	}
	tk, err := firstTicket(out.Data)
	if err != nil {
		return Result{StatusCode: resp.StatusCode, Err: err}
	}
	if tk.Status == "ok" {
		return Result{StatusCode: resp.StatusCode}
	}
	if tk.Details.Error == DeviceNotRegistered {
		if err := p.devices.DeactivateDevice(ctx, d.Subscriber.ID); err != nil {
			return Result{StatusCode: resp.StatusCode, Err: fmt.Errorf("%s; deactivate device: %w", DeviceNotRegistered, err)}
		}
		return Result{StatusCode: resp.StatusCode, Final: true,
			Err: errors.New(DeviceNotRegistered + ": device deactivated")}
	}
	return Result{StatusCode: resp.StatusCode,
		Err: fmt.Errorf("relay refused the message: %s %s", tk.Details.Error, tk.Message)}
}

// firstTicket reads the ticket of the request's one message: Expo answers
// an array request with an array of tickets (an object for an object).
func firstTicket(data json.RawMessage) (pushTicket, error) {
	var tks []pushTicket
	if err := json.Unmarshal(data, &tks); err == nil && len(tks) > 0 {
		return tks[0], nil
	}
	var tk pushTicket
	if err := json.Unmarshal(data, &tk); err == nil && tk.Status != "" {
		return tk, nil
	}
	return pushTicket{}, errors.New("relay answer holds no push ticket")
}
