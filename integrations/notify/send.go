package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/netguard"
)

// MaxResponseBody is how much of a channel's answer is read: enough for
// an error text; a receiver answering gigabytes must not hold a worker.
const MaxResponseBody = 64 << 10

// Bounds of what is sent: the services cut longer messages anyway.
const (
	maxTitle = 250
	maxBody  = 4000
)

// Notifier sends notifications through the channels of NOTIFICATION_URLS,
// read at each call (a changed setting applies at once).
type Notifier struct {
	settings docflow.SettingsStore
	client   *http.Client
	log      zerolog.Logger
	// Mailer sends the mailto channels' mail (the application's
	// docflow.Mailer, integrations/smtp over the SMTP settings); nil:
	// mailto channels fail with "no mailer configured".
	Mailer docflow.Mailer
	// Bases replaces the scheme and host of a kind's endpoint ("slack":
	// "http://127.0.0.1:8080"): tests point the cloud services at local
	// receivers with it.
	Bases map[string]string
	// Timeout bounds one channel's send (default WEBHOOK_TIMEOUT).
	Timeout time.Duration
	// Recorder, when set, hears one integration metric per channel sent
	// to (type notify, direction out, target the channel's kind, the
	// title and body size, outcome and duration).
	Recorder docflow.Recorder
}

// New builds a Notifier over settings. Its HTTP connections go through
// netguard with WEBHOOK_ALLOWED_HOSTS as the exceptions; redirects are
// never followed. Set Mailer for mailto channels.
func New(settings docflow.SettingsStore, log zerolog.Logger) *Notifier {
	client := netguard.Client(netguard.ClientOptions{MaxIdleConnsPerHost: 2, Dialer: netguard.Dialer{
		Timeout: 10 * time.Second,
		Allowed: func() []string { return docflow.WebhookAllowedHosts.Get(settings) }}})
	return &Notifier{settings: settings, log: log.With().Str("component", "notify").Logger(), client: client}
}

// Channels parses NOTIFICATION_URLS in its order: for each entry either
// its channel or, when it is invalid, its failed result.
func (n *Notifier) Channels() ([]*Channel, []*docflow.NotificationResult) {
	entries := docflow.NotificationURLs.Get(n.settings)
	chans := make([]*Channel, len(entries))
	bad := make([]*docflow.NotificationResult, len(entries))
	for i, e := range entries {
		c, err := Parse(e)
		if err != nil {
			bad[i] = &docflow.NotificationResult{Service: Redact(e), Detail: "invalid entry: " + err.Error(), Invalid: true}
			continue
		}
		chans[i] = c
	}
	return chans, bad
}

// Notify sends note through every channel at once, each bounded by
// Timeout, and reports each outcome in the order of NOTIFICATION_URLS
// (invalid entries included, as failures). Status is failed when no
// channel is configured.
func (n *Notifier) Notify(ctx context.Context, note docflow.Notification) docflow.NotificationReport {
	note.Title, note.Body = clip(note.Title, maxTitle), clip(note.Body, maxBody)
	chans, bad := n.Channels()
	results := make([]docflow.NotificationResult, len(chans))
	timeout := n.Timeout
	if timeout <= 0 {
		timeout = docflow.WebhookTimeout.Get(n.settings)
	}
	var wg sync.WaitGroup
	for i, c := range chans {
		if c == nil {
			results[i] = *bad[i]
			n.log.Warn().Str("service", bad[i].Service).Str("error", bad[i].Detail).Msg("notification channel skipped")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			err := n.send(cctx, c, note)
			if n.Recorder != nil {
				n.Recorder.Record(docflow.IntegrationMetric(docflow.MetricTypeNotify, docflow.DirectionOut,
					c.Kind, start, int64(len(note.Title)+len(note.Body)), err))
			}
			r := docflow.NotificationResult{Service: c.Service, OK: err == nil, Detail: "sent"}
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("timed out after %v", timeout)
				}
				r.Detail = err.Error()
				n.log.Warn().Str("service", c.Service).Str("error", r.Detail).Msg("notification not sent")
			}
			results[i] = r
		}()
	}
	wg.Wait()
	return Report(results)
}

// Report summarizes results: success when all are ok, partial when some
// are, failed otherwise (none configured included).
func Report(results []docflow.NotificationResult) docflow.NotificationReport {
	ok := 0
	for _, r := range results {
		if r.OK {
			ok++
		}
	}
	rep := docflow.NotificationReport{ServicesCount: len(results), Results: results}
	if rep.Results == nil {
		rep.Results = []docflow.NotificationResult{}
	}
	switch {
	case len(results) == 0:
		rep.Status, rep.Message = docflow.NotifyFailed, "No notification channels are configured (NOTIFICATION_URLS)"
	case ok == len(results):
		rep.Status, rep.Message = docflow.NotifySuccess, fmt.Sprintf("Notification sent through %d of %d channels", ok, len(results))
	case ok > 0:
		rep.Status, rep.Message = docflow.NotifyPartial, fmt.Sprintf("Notification sent through %d of %d channels", ok, len(results))
	default:
		rep.Status, rep.Message = docflow.NotifyFailed, fmt.Sprintf("Notification sent through none of %d channels", len(results))
	}
	return rep
}

func (n *Notifier) send(ctx context.Context, c *Channel, note docflow.Notification) error {
	switch c.Kind {
	case "mailto":
		if n.Mailer == nil {
			return errors.New("no mailer configured")
		}
		return n.Mailer.Send(ctx, docflow.Mail{To: c.To, Subject: note.Title, Text: note.Body})
	case "ntfy":
		for _, t := range c.Topics {
			m := map[string]any{"topic": t, "title": note.Title, "message": note.Body}
			if c.Priority > 0 {
				m["priority"] = c.Priority
			}
			if err := n.post(ctx, c, c.Endpoint, m); err != nil {
				return err
			}
		}
		return nil
	}
	return n.post(ctx, c, c.Endpoint, payload(c, note))
}

// payload is the JSON body of an HTTP channel.
func payload(c *Channel, note docflow.Notification) map[string]any {
	switch c.Kind {
	case "gotify":
		return map[string]any{"title": note.Title, "message": note.Body, "priority": c.Priority}
	case "slack":
		m := map[string]any{"text": "*" + note.Title + "*\n" + note.Body}
		if c.Name != "" {
			m["username"] = c.Name
		}
		if c.SlackChannel != "" {
			m["channel"] = c.SlackChannel
		}
		return m
	case "discord":
		m := map[string]any{"content": clip("**"+note.Title+"**\n"+note.Body, 2000)}
		if c.Name != "" {
			m["username"] = c.Name
		}
		return m
	case "msteams":
		return map[string]any{"@type": "MessageCard", "@context": "https://schema.org/extensions",
			"summary": note.Title, "title": note.Title, "text": note.Body, "themeColor": "3AA3E3"}
	default: // json: Apprise's payload
		return map[string]any{"version": "1.0", "title": note.Title, "message": note.Body, "type": "info", "attachments": []any{}}
	}
}

func (n *Notifier) post(ctx context.Context, c *Channel, endpoint string, body any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if base := n.Bases[c.Kind]; base != "" {
		endpoint = rebase(endpoint, base)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return errors.New("cannot build the request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "docflow-notify")
	for k, v := range c.Headers {
		req.Header.Set(k, v)
	}
	if c.User != "" || c.Password != "" {
		req.SetBasicAuth(c.User, c.Password)
	}
	resp, err := n.client.Do(req)
	if err != nil {
		// url.Error quotes the URL, which holds tokens: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBody))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("service answered %d%s", resp.StatusCode, excerpt(answer))
	}
	return nil
}

// rebase puts endpoint's path and query under base's scheme and host.
func rebase(endpoint, base string) string {
	e, err1 := url.Parse(endpoint)
	b, err2 := url.Parse(base)
	if err1 != nil || err2 != nil {
		return endpoint
	}
	e.Scheme, e.Host = b.Scheme, b.Host
	return e.String()
}

// excerpt is a short, printable start of a service's error answer.
func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "")), " ")
	if s == "" {
		return ""
	}
	return ": " + clip(s, 200)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}
