package notify

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/rs/zerolog"

	"docflow"
	"docflow/analytics"
	"docflow/integrations/smtp"
)

type settings map[string]string

func (s settings) Get(k string) string { return s[k] }
func (s settings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTFOUND, "no")
}
func (s settings) Delete(context.Context, string) error             { return nil }
func (s settings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (s settings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.EINVALID, "read only")
}

// Apprise URLs as users copy them parse to the services' endpoints; bad
// entries say why, without their secrets.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in, kind, endpoint string
		check              func(*Channel) bool
	}{
		{"json://hooks.example.com:8080/notify?+X-Token=abc", "json", "http://hooks.example.com:8080/notify",
			func(c *Channel) bool { return c.Headers["X-Token"] == "abc" }},
		{"jsons://me:pw@hooks.example.com/n", "json", "https://hooks.example.com/n",
			func(c *Channel) bool { return c.User == "me" && c.Password == "pw" }},
		{"ntfy://alerts", "ntfy", "https://ntfy.sh", func(c *Channel) bool { return c.Topics[0] == "alerts" }},
		{"ntfys://u:p@ntfy.example.com/a/b?priority=high", "ntfy", "https://ntfy.example.com",
			func(c *Channel) bool { return len(c.Topics) == 2 && c.User == "u" && c.Priority == 4 }},
		{"ntfy://tk_abc@ntfy.local:8080/t", "ntfy", "http://ntfy.local:8080",
			func(c *Channel) bool { return c.Headers["Authorization"] == "Bearer tk_abc" }},
		{"gotify://gotify.example.com/sub/path/AbCtoken?priority=high", "gotify", "http://gotify.example.com/sub/path/message",
			func(c *Channel) bool { return c.Headers["X-Gotify-Key"] == "AbCtoken" && c.Priority == 8 }},
		{"gotifys://gotify.example.com/AbC", "gotify", "https://gotify.example.com/message",
			func(c *Channel) bool { return c.Priority == 5 }},
		{"slack://T1234/B5678/abcdEFGH/#general", "slack", "https://hooks.slack.com/services/T1234/B5678/abcdEFGH",
			func(c *Channel) bool { return c.SlackChannel == "#general" }},
		{"slack://docbot@T1234/B5678/abcdEFGH", "slack", "https://hooks.slack.com/services/T1234/B5678/abcdEFGH",
			func(c *Channel) bool { return c.Name == "docbot" }},
		{"discord://1234567890/tok-EN_x", "discord", "https://discord.com/api/webhooks/1234567890/tok-EN_x", nil},
		{"msteams://acme/a1@b2/c3/d4/e5", "msteams", "https://acme.webhook.office.com/webhookb2/a1@b2/IncomingWebhook/c3/d4/e5", nil},
		{"msteams://a1@b2/c3/d4", "msteams", "https://outlook.office.com/webhook/a1@b2/IncomingWebhook/c3/d4", nil},
		{"mailto://ops@example.com", "mailto", "", func(c *Channel) bool { return c.To[0] == "ops@example.com" }},
		{"mailto://example.com?to=a@x.org;b@y.org", "mailto", "", func(c *Channel) bool { return len(c.To) == 2 }},
	} {
		c, err := Parse(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if c.Kind != tc.kind || c.Endpoint != tc.endpoint || (tc.check != nil && !tc.check(c)) {
			t.Errorf("%s: %+v", tc.in, c)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"pushover://secret@x", "unsupported scheme"},
		{"slack://xoxb-1234-secret/#c", "bot tokens"},
		{"slack://T1/B2", "three webhook tokens"},
		{"discord://abc/secrettoken", "must be a number"},
		{"gotify://host", "without an application token"},
		{"mailto://example.com", "without a recipient"},
		{"msteams://a/b", "team and the webhook tokens"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.want)
		}
	}
	for in, want := range map[string]string{
		"slack://T1234/B5678/abcdEFGH/#general": "slack://***/***",
		"ntfys://u:pass@ntfy.example.com/topic": "ntfys://***@ntfy.example.com/***",
		"gotify://g.example.com/TOKEN":          "gotify://g.example.com/***",
		"json://h.example.com/p?+Auth=secret":   "json://h.example.com/***?***",
		"ntfy://tk_secret@h/t":                  "ntfy://***@h/***",
		"mailto://ops@example.com":              "mailto://ops@example.com",
		"pushover://usertoken@apptoken":         "pushover://***@***",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%s) = %s, want %s", in, got, want)
		}
	}
}

// received is one request a receiver got.
type received struct {
	path, auth, gotifyKey, contentType string
	body                               map[string]any
}

func receiver(t *testing.T, status int) (*httptest.Server, func() []received) {
	var mu sync.Mutex
	var got []received
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m)
		mu.Lock()
		got = append(got, received{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Gotify-Key"), r.Header.Get("Content-Type"), m})
		mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []received {
		mu.Lock()
		defer mu.Unlock()
		return append([]received(nil), got...)
	}
}

// smtpBackend is an in-process SMTP server keeping what it receives.
type smtpBackend struct {
	mu   sync.Mutex
	msgs []smtpMsg
}
type smtpMsg struct {
	from string
	to   []string
	data string
}
type smtpSession struct {
	b *smtpBackend
	m smtpMsg
}

func (b *smtpBackend) NewSession(*gosmtp.Conn) (gosmtp.Session, error) {
	return &smtpSession{b: b}, nil
}
func (s *smtpSession) Mail(from string, _ *gosmtp.MailOptions) error { s.m.from = from; return nil }
func (s *smtpSession) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	s.m.to = append(s.m.to, to)
	return nil
}
func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.m.data = string(b)
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, s.m)
	s.b.mu.Unlock()
	return err
}
func (s *smtpSession) Reset()        { s.m = smtpMsg{} }
func (s *smtpSession) Logout() error { return nil }

func startSMTP(t *testing.T) (*smtpBackend, string) {
	be := &smtpBackend{}
	srv := gosmtp.NewServer(be)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return be, port
}

// Every kind reaches a real receiver with the request its service
// expects; mailto goes through an SMTP server; the invalid entry is
// reported and the others are still sent (partial).
func TestNotifyEveryChannel(t *testing.T) {
	srv, got := receiver(t, 200)
	be, smtpPort := startSMTP(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	urls := []string{
		"json://user:pw@" + host + "/hook",
		"ntfy://" + host + "/alerts?priority=max",
		"gotify://" + host + "/gotify/APPTOKEN",
		"slack://bot@T1/B2/C3/#ops",
		"discord://12345/discordtoken",
		"msteams://acme/aa@bb/cc/dd/ee",
		"mailto://ops@example.com",
		"pushover://nope@x",
	}
	st := settings{"NOTIFICATION_URLS": strings.Join(urls, ", "), "WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
		"SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtpPort, "SMTP_FROM": "docflow@example.com"}
	n := New(st, zerolog.Nop())
	n.Mailer = smtp.New(st)
	n.Bases = map[string]string{"slack": srv.URL, "discord": srv.URL, "msteams": srv.URL}
	rep := n.Notify(context.Background(), docflow.Notification{Title: "Hello", Body: "World"})
	if rep.Status != docflow.NotifyPartial || rep.ServicesCount != 8 || len(rep.Results) != 8 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Results {
		if ok := !strings.HasPrefix(r.Service, "pushover"); r.OK != ok {
			t.Errorf("result %+v", r)
		}
		if strings.Contains(r.Service, "APPTOKEN") || strings.Contains(r.Service, "discordtoken") {
			t.Errorf("secret in %q", r.Service)
		}
	}
	byPath := map[string]received{}
	for _, r := range got() {
		byPath[r.path] = r
		if r.contentType != "application/json" {
			t.Errorf("%s: content type %q", r.path, r.contentType)
		}
	}
	check := func(path string, ok func(received) bool) {
		t.Helper()
		r, found := byPath[path]
		if !found || !ok(r) {
			t.Errorf("%s: %+v (found %v)", path, r, found)
		}
	}
	check("/hook", func(r received) bool {
		return r.body["title"] == "Hello" && r.body["message"] == "World" && r.body["version"] == "1.0" &&
			r.auth == "Basic dXNlcjpwdw==" // user:pw
	})
	check("/", func(r received) bool {
		return r.body["topic"] == "alerts" && r.body["title"] == "Hello" && r.body["message"] == "World" && r.body["priority"] == 5.0
	})
	check("/gotify/message", func(r received) bool {
		return r.gotifyKey == "APPTOKEN" && r.body["title"] == "Hello" && r.body["message"] == "World" && r.body["priority"] == 5.0
	})
	check("/services/T1/B2/C3", func(r received) bool {
		return r.body["text"] == "*Hello*\nWorld" && r.body["channel"] == "#ops" && r.body["username"] == "bot"
	})
	check("/api/webhooks/12345/discordtoken", func(r received) bool { return r.body["content"] == "**Hello**\nWorld" })
	check("/webhookb2/aa@bb/IncomingWebhook/cc/dd/ee", func(r received) bool {
		return r.body["@type"] == "MessageCard" && r.body["title"] == "Hello" && r.body["text"] == "World"
	})
	be.mu.Lock()
	defer be.mu.Unlock()
	if len(be.msgs) != 1 || be.msgs[0].from != "docflow@example.com" || be.msgs[0].to[0] != "ops@example.com" ||
		!strings.Contains(be.msgs[0].data, "Subject: Hello") || !strings.Contains(be.msgs[0].data, "World") {
		t.Errorf("mail: %+v", be.msgs)
	}
}

// A receiver on a private address is refused unless WEBHOOK_ALLOWED_HOSTS
// names it; a failing service's status is reported; a hanging one times
// out; a huge answer is read only up to the bound; no channel at all is
// failed.
func TestNotifyFaults(t *testing.T) {
	failing, _ := receiver(t, 500)
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(hang)
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		chunk := []byte(strings.Repeat("x", 1<<16))
		for i := 0; i < 32<<10; i++ { // 2 GiB unless the client stops
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer huge.Close()
	h := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

	st := settings{"NOTIFICATION_URLS": "json://" + h(failing) + "/x"}
	n := New(st, zerolog.Nop())
	rep := n.Notify(context.Background(), docflow.Notification{Title: "t", Body: "b"})
	if rep.Status != docflow.NotifyFailed || !strings.Contains(rep.Results[0].Detail, "private or internal") {
		t.Fatalf("private address: %+v", rep)
	}

	st["WEBHOOK_ALLOWED_HOSTS"] = "127.0.0.1"
	st["NOTIFICATION_URLS"] = "json://" + h(failing) + "/x, json://" + h(hanging) + "/y, json://" + h(huge) + "/z"
	n.Timeout = time.Second
	start := time.Now()
	rep = n.Notify(context.Background(), docflow.Notification{Title: "t", Body: "b"})
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	want := []string{"service answered 500", "timed out", "service answered 502: xxx"}
	for i, r := range rep.Results {
		if r.OK || !strings.Contains(r.Detail, want[i]) || len(r.Detail) > 300 {
			t.Errorf("result %d: %+v", i, r)
		}
	}

	st["NOTIFICATION_URLS"] = ""
	if rep := n.Notify(context.Background(), docflow.Notification{}); rep.Status != docflow.NotifyFailed || rep.ServicesCount != 0 || rep.Results == nil {
		t.Errorf("none: %+v", rep)
	}
}

// Each channel sent to is one integration metric (type notify, target the
// channel's kind); a mailto channel is also the mailer's smtp send; an
// invalid entry sends nothing and is not measured.
func TestNotifyRecordsIntegrationMetrics(t *testing.T) {
	ok, _ := receiver(t, 200)
	failing, _ := receiver(t, 500)
	_, smtpPort := startSMTP(t)
	h := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	st := settings{"NOTIFICATION_URLS": "json://" + h(ok) + "/a, ntfy://" + h(failing) + "/t, mailto://ops@example.com, pushover://nope@x",
		"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1", "SMTP_HOST": "127.0.0.1", "SMTP_PORT": smtpPort, "SMTP_FROM": "docflow@example.com"}
	rec := &analytics.Memory{}
	n := New(st, zerolog.Nop())
	n.Mailer = smtp.New(st)
	n.Mailer.(*smtp.Mailer).Recorder = rec
	n.Recorder = rec
	n.Notify(context.Background(), docflow.Notification{Title: "Hello", Body: "World"})

	byType := map[string]docflow.Metric{}
	for _, m := range rec.Metrics(docflow.MetricIntegration) {
		if m.Direction != docflow.DirectionOut || m.Duration <= 0 || m.Bytes != int64(len("Hello")+len("World")) {
			t.Errorf("metric %+v", m)
		}
		byType[m.Type+"/"+m.Target] = m
	}
	if len(byType) != 4 {
		t.Fatalf("metrics %+v", byType)
	}
	for key, want := range map[string]string{"notify/json": docflow.OutcomeOK, "notify/ntfy": docflow.OutcomeFailed,
		"notify/mailto": docflow.OutcomeOK, "smtp/127.0.0.1": docflow.OutcomeOK} {
		if m := byType[key]; m.Status != want || (want == docflow.OutcomeFailed) != (m.ErrorClass != "") {
			t.Errorf("%s: %+v", key, m)
		}
	}
}
