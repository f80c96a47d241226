package imap_test

import (
	"bytes"
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/netguard"
)

// wire records every byte a client writes on its connections, as they go
// on the wire (encrypted once TLS is up). It dials from 127.0.0.1: Dovecot
// counts a connection whose two ends share an address as secure.
type wire struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (w *wire) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: c, w: w}, nil
}

func (w *wire) saw(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Contains(w.out.Bytes(), []byte(s))
}

type wireConn struct {
	net.Conn
	w *wire
}

func (c *wireConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.w.out.Write(p)
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// tlsIntegration is an IMAP integration of addr with the security mode
// and, when not empty, ca_certificate.
func tlsIntegration(addr, security string, ca []byte) *docflow.Integration {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	cfg := map[string]any{"host": host, "port": float64(p), "security": security}
	if len(ca) > 0 {
		cfg["ca_certificate"] = string(ca)
	}
	return &docflow.Integration{ID: 1, Config: cfg,
		Credentials: map[string]string{"username": "alice", "password": "s3cret-pw"}}
}

// tryConnect connects with in's configuration through w.
func tryConnect(t *testing.T, in *docflow.Integration, w *wire) (*imap.Client, error) {
	t.Helper()
	cfg, err := imap.ParseConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dial, cfg.IOTimeout = w.dial, 5*time.Second
	k, err := imap.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = k.Connect(ctx)
	if err == nil {
		t.Cleanup(func() { k.Close(context.Background()) })
	}
	return k, err
}

// checkTLS runs the checks shared by both servers: TLS and STARTTLS
// connect with the CA and never show the password on the wire; without
// the CA both fail with a certificate error, which the integration test
// reports; a plain login is refused by the server.
func checkTLS(t *testing.T, ca *imaptest.CA, tlsAddr, startAddr string) {
	for _, c := range []struct{ security, addr string }{{"tls", tlsAddr}, {"starttls", startAddr}} {
		t.Run(c.security, func(t *testing.T) {
			w := &wire{}
			k, err := tryConnect(t, tlsIntegration(c.addr, c.security, ca.PEM), w)
			if err != nil {
				t.Fatalf("connect with the CA: %v", err)
			}
			if !k.Connected() {
				t.Fatal("not connected")
			}
			if w.saw("s3cret-pw") || !w.saw("\x16\x03") { // a TLS handshake record, no password
				t.Fatal("the password went on the wire in clear, or no TLS")
			}
			if c.security == "starttls" && !w.saw("STARTTLS") {
				t.Fatal("no STARTTLS command")
			}

			w = &wire{}
			_, err = tryConnect(t, tlsIntegration(c.addr, c.security, nil), w)
			if err == nil || !strings.Contains(err.Error(), "certificate is not trusted") || !imap.IsConnection(err) {
				t.Fatalf("connect without the CA = %v", err)
			}
			if w.saw("s3cret-pw") {
				t.Fatal("the password was sent to an unverified server")
			}
			ok, msg := imap.Tester{Dial: w.dial, Timeout: 10 * time.Second}.TestIntegration(context.Background(), tlsIntegration(c.addr, c.security, nil))
			if ok || !strings.Contains(msg, "certificate is not trusted") || !strings.Contains(msg, "ca_certificate") || strings.Contains(msg, "s3cret-pw") {
				t.Fatalf("integration test without the CA = %v %q", ok, msg)
			}
			t.Logf("integration test message: %s", msg)
			ok, msg = imap.Tester{Dial: w.dial, Timeout: 10 * time.Second}.TestIntegration(context.Background(), tlsIntegration(c.addr, c.security, ca.PEM))
			if !ok {
				t.Fatalf("integration test with the CA = %q", msg)
			}
		})
	}
	t.Run("plain login refused", func(t *testing.T) {
		// The STARTTLS listener refuses a login before TLS: what STARTTLS
		// connected above did log in over TLS.
		_, err := tryConnect(t, tlsIntegration(startAddr, "none", nil), &wire{})
		if err == nil || imap.IsConnection(err) || !strings.Contains(err.Error(), "login refused") {
			t.Fatalf("plain login = %v", err)
		}
		t.Logf("server's answer: %v", err)
	})
}

func TestDovecotTLSAndStartTLS(t *testing.T) {
	t.Parallel()
	ca := imaptest.NewCA(t)
	cert, key := ca.Issue(t, "127.0.0.2")
	d := imaptest.StartDovecotTLS(t, map[string]string{"alice": "s3cret-pw"}, imaptest.DovecotTLS{CertPEM: cert, KeyPEM: key, Host: "127.0.0.2"})
	checkTLS(t, ca, d.TLSAddr, d.Addr)
	// A certificate issued for another name fails as such: the client
	// verifies mail.example.com, which is dialled at the server's address.
	_, port, _ := net.SplitHostPort(d.TLSAddr)
	in := tlsIntegration(net.JoinHostPort("mail.example.com", port), "tls", ca.PEM)
	cfg, err := imap.ParseConfig(in)
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{}
	cfg.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) { return w.dial(ctx, network, d.TLSAddr) }
	k, _ := imap.New(cfg, nil)
	err = k.Connect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "not valid for this host") {
		t.Fatalf("connect under another name = %v", err)
	}
}

func TestMemServerTLSAndStartTLS(t *testing.T) {
	t.Parallel()
	ca := imaptest.NewCA(t)
	tlsAddr, startAddr := imaptest.MemServerTLS(t, "alice", "s3cret-pw", ca.ServerTLS(t, "127.0.0.1"))
	checkTLS(t, ca, tlsAddr, startAddr)
	// A server that does not offer STARTTLS is not talked to in clear.
	plain := imaptest.MemServer(t, "alice", "s3cret-pw", false)
	w := &wire{}
	if _, err := tryConnect(t, tlsIntegration(plain, "starttls", ca.PEM), w); err == nil || w.saw("s3cret-pw") {
		t.Fatalf("starttls to a server without it = %v", err)
	}
}

func TestPlainToARemoteHostRefusedByTheIntegrationTest(t *testing.T) {
	t.Parallel()
	for _, host := range []string{"mail.example.com", "10.0.0.1", "192.0.2.1"} {
		in := tlsIntegration(net.JoinHostPort(host, "143"), "none", nil)
		ok, msg := imap.Tester{Timeout: time.Second}.TestIntegration(context.Background(), in)
		if ok || !strings.Contains(msg, "loopback") {
			t.Fatalf("%s: %v %q", host, ok, msg)
		}
	}
	// Allowed, it is tried (and fails here on the network, not on policy).
	in := tlsIntegration("192.0.2.1:143", "none", nil)
	in.Config["allow_insecure"] = true
	admitted := netguard.Dialer{Allowed: func() []string { return []string{"192.0.2.1"} }}.DialContext
	if ok, msg := (imap.Tester{Dial: admitted, Timeout: 300 * time.Millisecond}).TestIntegration(context.Background(), in); ok || strings.Contains(msg, "loopback") {
		t.Fatalf("allow_insecure: %v %q", ok, msg)
	}
}
