package email

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"

	gomail "github.com/wneessen/go-mail"

	"docflow"
	"docflow/internal/netguard"
)

func TestSubject(t *testing.T) {
	doc := docflow.DestinationDoc{FileID: 7, Name: "scan.pdf", Title: "Invoice\r\nBcc: x@evil", Date: "2026-11-29",
		Category: "invoice", OriginalFilename: "IMG_1.jpg"}
	for tmpl, want := range map[string]string{
		"{title}":                       "Invoice Bcc: x@evil",
		"{date} {category} {id}":        "2026-11-29 invoice 7",
		"From {original_filename}":      "From IMG_1.jpg",
		"{unknown} stays":               "{unknown} stays",
		"{category}{category}{nothing}": "invoiceinvoice{nothing}",
	} {
		if got := Subject(tmpl, doc); got != want {
			t.Errorf("%q: %q, want %q", tmpl, got, want)
		}
	}
	if got := Subject("{title}", docflow.DestinationDoc{Name: "x.pdf"}); got != "x.pdf" {
		t.Errorf("empty title: %q", got)
	}
	long := Subject(strings.Repeat("ü", 400), doc)
	if n := len([]rune(long)); n != maxSubjectRunes || !strings.HasSuffix(long, "…") {
		t.Errorf("long subject has %d runes", n)
	}
}

// TestMessageParses: the streamed message is MIME a standard parser
// reads back: headers decoded, the text, and the attachment's name and
// bytes, with every line within the limits of RFC 5322.
func TestMessageParses(t *testing.T) {
	body := bytes.Repeat([]byte{0, 1, 2, 250, '\n', '.', '\r'}, 5000)
	m := newMessage(mail.Address{Name: "Scanner Ü", Address: "s@example.com"}, []string{"a@example.com", "b@example.com"},
		"{title}", 4, docflow.DestinationDoc{FileID: 9, Name: "Bericht – März (final) \"v2\".pdf", MimeType: "application/pdf; x=y",
			Title: strings.Repeat("Grüße ", 40), Size: int64(len(body))})
	var buf bytes.Buffer
	if err := m.write(&buf, bytes.NewReader(body)); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(buf.String(), "\r\n") {
		if len(line) > 998 {
			t.Fatalf("line %d has %d characters", i, len(line))
		}
	}
	msg, err := mail.ReadMessage(&buf)
	if err != nil {
		t.Fatal(err)
	}
	dec := new(mime.WordDecoder)
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Fatalf("subject %q (%v), want %q", subject, err, m.Subject)
	}
	if msg.Header.Get("Message-ID") != "<docflow.file-9.integration-4@example.com>" {
		t.Fatalf("Message-ID %q", msg.Header.Get("Message-ID"))
	}
	if to, err := msg.Header.AddressList("To"); err != nil || len(to) != 2 {
		t.Fatalf("To %v %v", to, err)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	text, err := r.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	tb, _ := io.ReadAll(text)
	if !strings.Contains(string(tb), "Attached: Bericht") {
		t.Fatalf("text %q", tb)
	}
	att, err := r.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	if att.FileName() != m.Name {
		t.Fatalf("file name %q", att.FileName())
	}
	if ct, _, _ := mime.ParseMediaType(att.Header.Get("Content-Type")); ct != "application/pdf" {
		t.Fatalf("content type %q", ct)
	}
	got, err := io.ReadAll(att) // multipart decodes quoted-printable only
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, len(got))
	n, err := base64Decode(raw, got)
	if err != nil || !bytes.Equal(raw[:n], body) {
		t.Fatalf("attachment differs (%v)", err)
	}
}

func TestReplyClass(t *testing.T) {
	for _, tc := range []struct {
		code  int
		msg   string
		class docflow.DestinationFailure
	}{
		{535, "5.7.8 Authentication credentials invalid", docflow.DestAuth},
		{530, "5.7.0 Authentication required", docflow.DestAuth},
		{550, "5.1.1 User unknown", docflow.DestForbidden},
		{554, "5.7.1 Relay access denied", docflow.DestForbidden},
		{553, "sender not allowed", docflow.DestForbidden},
		{552, "5.3.4 Message size exceeds fixed limit", docflow.DestInvalid},
		{552, "5.2.2 Mailbox full", docflow.DestFull},
		{452, "4.3.1 Insufficient system storage", docflow.DestFull},
		{450, "4.2.2 Mailbox full", docflow.DestFull},
		{554, "5.6.0 Message content rejected", docflow.DestInvalid},
		{421, "4.4.2 Timeout", docflow.DestUnavailable},
		{451, "4.7.1 Greylisted", docflow.DestUnavailable},
	} {
		if got := replyClass(tc.code, tc.msg); got != tc.class {
			t.Errorf("%d %s: %s, want %s", tc.code, tc.msg, got, tc.class)
		}
	}
	err := classify(context.Background(), &sessionError{errors.New(`STARTTLS mode set to: "TLSMandatory", but target host does not support STARTTLS`)})
	if docflow.DestinationFailureOf(err) != docflow.DestForbidden || err.Error() != FailNoTLS {
		t.Errorf("no STARTTLS: %v", err)
	}
	err = classify(context.Background(), &sessionError{gomail.ErrNoSupportedAuthDiscovered})
	if docflow.DestinationFailureOf(err) != docflow.DestAuth || err.Error() != FailNoLogin {
		t.Errorf("no login method: %v", err)
	}
	err = classify(context.Background(), &commandError{"RCPT TO x", &textproto.Error{Code: 550, Msg: "5.1.1 <x>: no such user\nsecond"}})
	if err.Error() != "550 5.1.1 <x>: no such user" {
		t.Errorf("reason %q", err.Error())
	}
}

// TestTLSPolicy: the integration's own server must offer TLS, unless it
// is on this machine or the allow-list names it; the operator's server
// uses TLS when offered.
func TestTLSPolicy(t *testing.T) {
	c := NewClient(Config{Dialer: netguard.Dialer{Allowed: func() []string { return []string{"mail.intranet"} }}})
	for _, tc := range []struct {
		srv  Server
		want gomail.TLSPolicy
	}{
		{Server{Host: "smtp.example.com", Port: 587}, gomail.TLSMandatory},
		{Server{Host: "mail.intranet", Port: 25}, gomail.TLSOpportunistic},
		{Server{Host: "127.0.0.1", Port: 25}, gomail.TLSOpportunistic},
		{Server{Host: "smtp.example.com", Port: 587, Operator: true}, gomail.TLSOpportunistic},
	} {
		if got := c.tlsPolicy(&tc.srv); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.srv, got, tc.want)
		}
	}
}

func base64Decode(dst, src []byte) (int, error) {
	return base64.StdEncoding.Decode(dst, bytes.ReplaceAll(bytes.ReplaceAll(src, []byte("\r"), nil), []byte("\n"), nil))
}
