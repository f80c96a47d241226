package email_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/email"
	"docflow/internal/netguard"
	"docflow/internal/testsupport/mailpit"
)

var allowLoopback = netguard.Dialer{Allowed: func() []string { return []string{"127.0.0.1"} }, Timeout: 5 * time.Second}

type settings map[string]string

func (m settings) Get(k string) string { return m[k] }
func (m settings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m settings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (m settings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m settings) Delete(context.Context, string) error { return nil }

// own is an integration sending through mp as its own server.
func own(mp *mailpit.Server, to string, creds map[string]string) *docflow.Integration {
	c := map[string]string{"smtp_host": mp.SMTPHost, "smtp_port": strconv.Itoa(mp.SMTPPort),
		"smtp_username": "scanner@example.com", "smtp_password": "secret"}
	for k, v := range creds {
		c[k] = v
	}
	return &docflow.Integration{ID: 9, IntegrationType: docflow.IntegrationEmail, Direction: docflow.DirectionDestination,
		Config: map[string]any{"to": to, "subject": "{title}"}, Credentials: c}
}

func newClient(t testing.TB, in *docflow.Integration, dial netguard.Dialer, s settings) docflow.DestinationClient {
	t.Helper()
	c, err := email.New(in, dial, s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantClass(t *testing.T, err error, class docflow.DestinationFailure, reason string) {
	t.Helper()
	var de *docflow.DestinationError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a DestinationError", err, err)
	}
	if de.Class != class || !strings.Contains(de.Reason, reason) {
		t.Fatalf("error = %s %q (%v), want %s with %q", de.Class, de.Reason, de.Err, class, reason)
	}
}

// latest waits for the newest message to address and returns it.
func latest(t testing.TB, mp *mailpit.Server, address string, n int) *mailpit.Detail {
	t.Helper()
	mp.WaitFor(t, address, n, 15*time.Second)
	msgs, err := mp.Messages()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		for _, to := range m.To {
			if strings.EqualFold(to.Address, address) {
				d, err := mp.Message(m.ID)
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
		}
	}
	t.Fatalf("no message to %s", address)
	return nil
}

func attachment(t testing.TB, mp *mailpit.Server, d *mailpit.Detail) []byte {
	t.Helper()
	if len(d.Attachments) != 1 {
		t.Fatalf("message %s has %d attachments", d.ID, len(d.Attachments))
	}
	rc, err := mp.Part(d.ID, d.Attachments[0].PartID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDeliverOwnServer sends a document through the integration's own
// server to two recipients: the subject from the template, the
// attachment's name and bytes as given, the sender the SMTP user, and a
// Message-ID of the document and the integration.
func TestDeliverOwnServer(t *testing.T) {
	mp := mailpit.Start(t)
	in := own(mp, "ann@example.com, bob@example.com", nil)
	in.Config["subject"] = "Scan: {title} ({date}, {category}) #{id}"
	c := newClient(t, in, allowLoopback, nil)
	body := []byte("%PDF-1.4 an invoice\n")
	doc := docflow.DestinationDoc{FileID: 31, Name: "Rechnung März 2026 (Kopie) #3.pdf", MimeType: "application/pdf",
		Size: int64(len(body)), Title: "Invoice ACME — März", Date: "2026-11-29", Category: "invoice",
		Tags: []string{"acme", "2026"}}
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	remote, err := c.Deliver(context.Background(), doc, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if remote != "mailto:ann@example.com,bob@example.com" {
		t.Fatalf("remote %q", remote)
	}
	d := latest(t, mp, "bob@example.com", 1)
	if d.Subject != "Scan: Invoice ACME — März (2026-11-29, invoice) #31" {
		t.Errorf("subject %q", d.Subject)
	}
	if d.From.Address != "scanner@example.com" || len(d.To) != 2 {
		t.Errorf("from %q to %v", d.From.Address, d.To)
	}
	if d.MessageID != "docflow.file-31.integration-9@example.com" {
		t.Errorf("Message-ID %q", d.MessageID)
	}
	if d.Attachments[0].FileName != doc.Name || d.Attachments[0].ContentType != "application/pdf" {
		t.Errorf("attachment %+v", d.Attachments[0])
	}
	if got := attachment(t, mp, d); !bytes.Equal(got, body) {
		t.Errorf("attachment holds %q", got)
	}
	if !strings.Contains(d.Text, "Tags: acme, 2026") || !strings.Contains(d.Text, "Attached: "+doc.Name) {
		t.Errorf("text %q", d.Text)
	}
	if n, _ := mp.Count("ann@example.com"); n != 1 {
		t.Errorf("ann got %d messages", n)
	}
}

// TestDeliverThroughSettings: without smtp_host the SMTP settings'
// server is used, from SMTP_FROM, even on a private address the
// allow-list does not name (the operator chose it).
func TestDeliverThroughSettings(t *testing.T) {
	mp := mailpit.Start(t)
	s := settings{"SMTP_HOST": mp.SMTPHost, "SMTP_PORT": strconv.Itoa(mp.SMTPPort),
		"SMTP_USERNAME": "docflow", "SMTP_PASSWORD": "x", "SMTP_FROM": "docflow <noreply@example.org>"}
	in := &docflow.Integration{ID: 3, Config: map[string]any{"to": "carol@example.com"}}
	c := newClient(t, in, netguard.Dialer{}, s)
	doc := docflow.DestinationDoc{FileID: 5, Name: "scan.pdf", Size: 3}
	if _, err := c.Deliver(context.Background(), doc, strings.NewReader("abc")); err != nil {
		t.Fatal(err)
	}
	d := latest(t, mp, "carol@example.com", 1)
	// No title: the subject is the file's name.
	if d.From.Address != "noreply@example.org" || d.Subject != "scan.pdf" {
		t.Fatalf("from %q subject %q", d.From.Address, d.Subject)
	}
}

// TestNotConfigured: neither an own server nor SMTP settings.
func TestNotConfigured(t *testing.T) {
	in := &docflow.Integration{Config: map[string]any{"to": "a@example.com"}}
	c := newClient(t, in, netguard.Dialer{}, settings{})
	wantClass(t, c.Connect(context.Background()), docflow.DestInvalid, "SMTP_HOST")
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf"}, strings.NewReader(""))
	wantClass(t, err, docflow.DestInvalid, "not configured")
	// An own server whose user is no address, and no SMTP_FROM.
	in.Credentials = map[string]string{"smtp_host": "mail.example.com", "smtp_username": "scanner"}
	c = newClient(t, in, netguard.Dialer{}, settings{})
	wantClass(t, c.Connect(context.Background()), docflow.DestInvalid, "sender")
}

// TestOwnServerPrivateRefused: the integration's own server is a user's
// input: a private address the allow-list does not name is refused.
func TestOwnServerPrivateRefused(t *testing.T) {
	mp := mailpit.Start(t)
	c := newClient(t, own(mp, "a@example.com", nil), netguard.Dialer{}, nil)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 1}, strings.NewReader("x"))
	wantClass(t, err, docflow.DestForbidden, netguard.FailPrivate)
}

// TestShortBodyNotSent: a body that ends before doc.Size bytes, or
// fails, aborts the session before the message ends: nothing arrives.
func TestShortBodyNotSent(t *testing.T) {
	mp := mailpit.Start(t)
	c := newClient(t, own(mp, "dan@example.com", nil), allowLoopback, nil)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "short.pdf", Size: 1000}, strings.NewReader("only a bit"))
	wantClass(t, err, docflow.DestUnavailable, email.FailDocument)
	_, err = c.Deliver(context.Background(), docflow.DestinationDoc{Name: "broken.pdf", Size: 1000},
		io.MultiReader(strings.NewReader("a bit"), errReader{}))
	wantClass(t, err, docflow.DestUnavailable, email.FailDocument)
	// A good one after them, and it is the only one.
	if _, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "ok.pdf", Size: 2}, strings.NewReader("ok")); err != nil {
		t.Fatal(err)
	}
	latest(t, mp, "dan@example.com", 1)
	time.Sleep(200 * time.Millisecond)
	if n, _ := mp.Count("dan@example.com"); n != 1 {
		t.Fatalf("%d messages arrived, want only the complete one", n)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk error") }

// TestTooLarge: a document larger than the server's SIZE is refused
// before it is sent.
func TestTooLarge(t *testing.T) {
	mp := mailpit.StartWith(t, mailpit.Options{MaxMessageMB: 1})
	c := newClient(t, own(mp, "eve@example.com", nil), allowLoopback, nil)
	body := make([]byte, 1<<20)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "big.pdf", Size: int64(len(body))}, bytes.NewReader(body))
	wantClass(t, err, docflow.DestInvalid, "larger than the mail server takes")
}

// TestRefusals: a login refused (535), a recipient refused (550) and a
// full mailbox (452) by a real server, with its code and reason, at
// delivery and at the probe, which sends nothing.
func TestRefusals(t *testing.T) {
	auth := mailpit.StartWith(t, mailpit.Options{Users: map[string]string{"scanner@example.com": "right"}})
	c := newClient(t, own(auth, "a@example.com", nil), allowLoopback, nil)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 1}, strings.NewReader("x"))
	wantClass(t, err, docflow.DestAuth, "535")
	wantClass(t, c.Probe(context.Background()), docflow.DestAuth, "535")
	ok := newClient(t, own(auth, "a@example.com", map[string]string{"smtp_password": "right"}), allowLoopback, nil)
	if err := ok.Probe(context.Background()); err != nil {
		t.Fatal(err)
	}

	picky := mailpit.StartWith(t, mailpit.Options{AllowedRecipients: `@example\.com$`})
	c = newClient(t, own(picky, "a@example.com, b@elsewhere.org", nil), allowLoopback, nil)
	_, err = c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 1}, strings.NewReader("x"))
	wantClass(t, err, docflow.DestForbidden, "550")
	wantClass(t, c.Probe(context.Background()), docflow.DestForbidden, "550")

	full := mailpit.StartWith(t, mailpit.Options{ChaosTriggers: "Recipient:452:100"})
	c = newClient(t, own(full, "a@example.com", nil), allowLoopback, nil)
	_, err = c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 1}, strings.NewReader("x"))
	wantClass(t, err, docflow.DestFull, "452")

	for _, mp := range []*mailpit.Server{auth, picky, full} {
		if msgs, _ := mp.Messages(); len(msgs) != 0 {
			t.Fatalf("%d messages arrived", len(msgs))
		}
	}
}

func TestUnreachable(t *testing.T) {
	mp := mailpit.Start(t)
	in := own(mp, "a@example.com", nil)
	in.Credentials["smtp_port"] = "1"
	c := newClient(t, in, allowLoopback, nil)
	_, err := c.Deliver(context.Background(), docflow.DestinationDoc{Name: "a.pdf", Size: 1}, strings.NewReader("x"))
	wantClass(t, err, docflow.DestUnavailable, netguard.FailConnect)
}

func TestConfigRefused(t *testing.T) {
	for name, in := range map[string]*docflow.Integration{
		"no to":      {Config: map[string]any{}},
		"bad to":     {Config: map[string]any{"to": "a@example.com, nope"}},
		"bad port":   {Config: map[string]any{"to": "a@example.com"}, Credentials: map[string]string{"smtp_host": "h", "smtp_port": "99999"}},
		"bad ca pem": {Config: map[string]any{"to": "a@example.com", "ca_certificate": "x"}, Credentials: map[string]string{"smtp_host": "h"}},
	} {
		_, err := email.New(in, netguard.Dialer{}, nil)
		var de *docflow.DestinationError
		if !errors.As(err, &de) || de.Class != docflow.DestInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}
