package smtp_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"docflow"
	"docflow/analytics"
	"docflow/integrations/smtp"
)

type mapSettings map[string]string

func (m mapSettings) Get(k string) string { return m[k] }
func (m mapSettings) Lookup(context.Context, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m mapSettings) List(context.Context) ([]*docflow.Setting, error) { return nil, nil }
func (m mapSettings) Set(context.Context, string, string) (*docflow.Setting, error) {
	return nil, docflow.Errorf(docflow.ENOTIMPL, "no")
}
func (m mapSettings) Delete(context.Context, string) error { return nil }

// received is one message the in-process server took.
type received struct {
	tls   bool
	user  string
	from  string
	rcpts []string
	data  string
}

type backend struct {
	mu   sync.Mutex
	msgs []received
}

type session struct {
	b    *backend
	conn *gosmtp.Conn
	cur  received
}

func (b *backend) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	return &session{b: b, conn: c}, nil
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "mailer" || pass != "s3cret" {
			return errors.New("bad credentials")
		}
		s.cur.user = user
		return nil
	}), nil
}
func (s *session) Mail(from string, _ *gosmtp.MailOptions) error {
	_, s.cur.tls = s.conn.TLSConnectionState()
	s.cur.from = from
	return nil
}
func (s *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	s.cur.rcpts = append(s.cur.rcpts, to)
	return nil
}
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.cur.data = string(b)
	s.b.mu.Lock()
	s.b.msgs = append(s.b.msgs, s.cur)
	s.b.mu.Unlock()
	return err
}
func (s *session) Reset()        { s.cur = received{user: s.cur.user} }
func (s *session) Logout() error { return nil }

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "smtp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// startServer runs a go-smtp server on a free port; with cert it offers
// STARTTLS and AUTH only after it.
func startServer(t *testing.T, cert *tls.Certificate) (*backend, int) {
	t.Helper()
	b := &backend{}
	srv := gosmtp.NewServer(b)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	if cert != nil {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{*cert}}
	} else {
		srv.AllowInsecureAuth = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { srv.Close() })
	return b, ln.Addr().(*net.TCPAddr).Port
}

func TestSendUsesSTARTTLSWhenOffered(t *testing.T) {
	cert, pool := selfSigned(t)
	b, port := startServer(t, &cert)
	m := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port),
		"SMTP_USERNAME": "mailer", "SMTP_PASSWORD": "s3cret", "SMTP_FROM": "docflow <noreply@example.com>"})
	m.TLSConfig = &tls.Config{RootCAs: pool}
	err := m.Send(context.Background(), docflow.Mail{To: []string{"ann@example.com"}, Subject: "Réinitialiser ✓", Text: "Hello Ann"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.msgs) != 1 {
		t.Fatalf("%d messages", len(b.msgs))
	}
	got := b.msgs[0]
	if !got.tls || got.user != "mailer" || got.from != "noreply@example.com" || strings.Join(got.rcpts, ",") != "ann@example.com" {
		t.Fatalf("received %+v", got)
	}
	if !strings.Contains(got.data, "Subject: =?UTF-8?") || !strings.Contains(got.data, "Hello Ann") {
		t.Fatalf("message:\n%s", got.data)
	}
}

func TestSendRefusesAnUntrustedCertificate(t *testing.T) {
	cert, _ := selfSigned(t)
	b, port := startServer(t, &cert)
	m := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port), "SMTP_FROM": "noreply@example.com"})
	err := m.Send(context.Background(), docflow.Mail{To: []string{"ann@example.com"}, Subject: "x", Text: "x"})
	if docflow.ErrorCode(err) != docflow.EBADGATEWAY || len(b.msgs) != 0 {
		t.Fatalf("an untrusted STARTTLS certificate: %v, %d messages", err, len(b.msgs))
	}
}

func TestSendNoHeaderInjection(t *testing.T) {
	b, port := startServer(t, nil)
	m := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port), "SMTP_FROM": "noreply@example.com"})
	ctx := context.Background()
	if err := m.Send(ctx, docflow.Mail{To: []string{"ann@example.com"}, Subject: "hi\r\nBcc: eve@example.com\r\n\r\nforged", Text: "body"}); err != nil {
		t.Fatal(err)
	}
	data := b.msgs[0].data
	head := data[:strings.Index(data, "\r\n\r\n")]
	if strings.Contains(strings.ToLower(head), "\r\nbcc:") || len(b.msgs[0].rcpts) != 1 {
		t.Fatalf("a header was injected:\n%s", data)
	}
	for _, to := range []string{"ann@example.com\r\nBcc: eve@example.com", "Ann <ann@example.com>", "not-an-address", ""} {
		if err := m.Send(ctx, docflow.Mail{To: []string{to}, Subject: "x", Text: "x"}); docflow.ErrorCode(err) != docflow.EINVALID {
			t.Errorf("recipient %q: %v", to, err)
		}
	}
	bad := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port), "SMTP_FROM": "x@example.com\r\nBcc: eve@example.com"})
	if err := bad.Send(ctx, docflow.Mail{To: []string{"ann@example.com"}, Subject: "x", Text: "x"}); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Errorf("a forged SMTP_FROM: %v", err)
	}
	if len(b.msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(b.msgs))
	}
}

func TestSendNotConfigured(t *testing.T) {
	err := smtp.New(mapSettings{}).Send(context.Background(), docflow.Mail{To: []string{"a@example.com"}})
	if docflow.ErrorCode(err) != docflow.EUNAVAILABLE {
		t.Fatalf("no SMTP_HOST: %v", err)
	}
}

func TestSendTimesOutOnASilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // never greets
		}
	}()
	m := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), "SMTP_FROM": "noreply@example.com"})
	m.Timeout = 300 * time.Millisecond
	start := time.Now()
	err = m.Send(context.Background(), docflow.Mail{To: []string{"a@example.com"}, Subject: "x", Text: "x"})
	// The server never greets: a minute bounds a send that ignored its
	// timeout, however slow the machine.
	if err == nil || time.Since(start) > time.Minute {
		t.Fatalf("silent server: %v after %v", err, time.Since(start))
	}
}

func TestSendRecordsIntegrationMetrics(t *testing.T) {
	_, port := startServer(t, nil)
	rec := &analytics.Memory{}
	m := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port), "SMTP_FROM": "noreply@example.com"})
	m.Recorder = rec
	ctx := context.Background()
	if err := m.Send(ctx, docflow.Mail{To: []string{"ann@example.com"}, Subject: "hi", Text: "body"}); err != nil {
		t.Fatal(err)
	}
	// A server that is not there: the failure is measured too.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dead := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(deadPort), "SMTP_FROM": "noreply@example.com"})
	dead.Recorder = rec
	if err := dead.Send(ctx, docflow.Mail{To: []string{"ann@example.com"}, Subject: "x", Text: "x"}); err == nil {
		t.Fatal("sent to a closed port")
	}
	// Refused input never reaches the server and is not an operation.
	_ = m.Send(ctx, docflow.Mail{To: []string{"not-an-address"}, Subject: "x", Text: "x"})

	got := rec.Metrics(docflow.MetricIntegration)
	if len(got) != 2 {
		t.Fatalf("%d integration metrics, want 2: %+v", len(got), got)
	}
	ok, failed := got[0], got[1]
	if ok.Type != docflow.MetricTypeSMTP || ok.Direction != docflow.DirectionOut || ok.Target != "127.0.0.1" ||
		ok.Status != docflow.OutcomeOK || ok.Bytes != int64(len("hi")+len("body")) || ok.Duration <= 0 || ok.ErrorClass != "" {
		t.Errorf("sent mail metric %+v", ok)
	}
	if failed.Status != docflow.OutcomeFailed || failed.ErrorClass != docflow.ErrorClassRemote {
		t.Errorf("failed mail metric %+v", failed)
	}
}

// On the port that speaks TLS from the start (465; here a free port made
// so), the whole session is encrypted and the password goes over it.
func TestSendOverImplicitTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	b := &backend{}
	srv := gosmtp.NewServer(b)
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 5*time.Second, 5*time.Second
	srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	m := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port),
		"SMTP_USERNAME": "mailer", "SMTP_PASSWORD": "s3cret", "SMTP_FROM": "noreply@example.com"})
	m.TLSConfig = &tls.Config{RootCAs: pool}
	m.SetImplicitTLSPort(port)
	if err := m.Send(context.Background(), docflow.Mail{To: []string{"ann@example.com"}, Subject: "Hi", Text: "Hello Ann"}); err != nil {
		t.Fatal(err)
	}
	if len(b.msgs) != 1 || !b.msgs[0].tls || b.msgs[0].user != "mailer" {
		t.Fatalf("received %+v", b.msgs)
	}
	untrusting := smtp.New(mapSettings{"SMTP_HOST": "127.0.0.1", "SMTP_PORT": strconv.Itoa(port), "SMTP_FROM": "noreply@example.com"})
	untrusting.SetImplicitTLSPort(port)
	if err := untrusting.Send(context.Background(), docflow.Mail{To: []string{"ann@example.com"}, Subject: "Hi", Text: "x"}); err == nil || len(b.msgs) != 1 {
		t.Fatalf("sent to a server whose certificate is not trusted: %v", err)
	}
}
