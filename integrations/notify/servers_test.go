package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/testsupport/gotify"
	"docflow/internal/testsupport/ntfy"
)

// gotify:// reaches a real Gotify server: the message arrives under the
// application whose token the URL carries, with its title, body and
// priority; a wrong token is refused by the server and reported as a
// failure, without the token.
func TestGotifyServer(t *testing.T) {
	g := gotify.Start(t)
	token := g.NewApplication(t, "docflow")
	st := settings{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
		"NOTIFICATION_URLS": "gotify://" + g.HostPort + "/" + token + "?priority=high, gotify://" + g.HostPort + "/Awrongtoken"}
	n := New(st, zerolog.Nop())
	rep := n.Notify(context.Background(), docflow.Notification{Title: "Zahlungsproblem für Ann", Body: "card expired\nsecond line"})
	if rep.Status != docflow.NotifyPartial || len(rep.Results) != 2 || !rep.Results[0].OK || rep.Results[1].OK {
		t.Fatalf("report: %+v", rep)
	}
	if d := rep.Results[1].Detail; !strings.Contains(d, "401") || strings.Contains(d, "Awrongtoken") {
		t.Errorf("wrong token reported as %q", d)
	}
	msgs := g.WaitFor(t, 1, 10*time.Second)
	m := msgs[0]
	if len(msgs) != 1 || m.Title != "Zahlungsproblem für Ann" || m.Message != "card expired\nsecond line" || m.Priority != 8 {
		t.Fatalf("received %+v", msgs)
	}
}

// ntfy:// reaches a real ntfy server, when one can be had (see
// internal/testsupport/ntfy: the module proxy refuses its module here).
func TestNtfyServer(t *testing.T) {
	s := ntfy.Start(t)
	st := settings{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
		"NOTIFICATION_URLS": "ntfy://" + s.HostPort + "/docflow-alerts?priority=high"}
	rep := New(st, zerolog.Nop()).Notify(context.Background(), docflow.Notification{Title: "Hello", Body: "World"})
	if rep.Status != docflow.NotifySuccess {
		t.Fatalf("report: %+v", rep)
	}
	msgs, err := s.Messages("docflow-alerts")
	if err != nil || len(msgs) != 1 || msgs[0].Title != "Hello" || msgs[0].Message != "World" || msgs[0].Priority != 4 {
		t.Fatalf("received %+v (%v)", msgs, err)
	}
}
