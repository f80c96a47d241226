package imaptest

import (
	"crypto/tls"
	"io"
	"log"
	"net"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
)

// MemServer serves go-imap's in-memory server on a free loopback port for
// the test, with user/pass and the folders given (INBOX always); idle
// decides whether IDLE is offered. It returns the address.
func MemServer(t testing.TB, user, pass string, idle bool, folders ...string) string {
	t.Helper()
	srv := memServer(t, user, pass, idle, nil, folders)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln) //nolint:errcheck
	return ln.Addr().String()
}

// MemServerTLS serves the in-memory server (user/pass, INBOX, IDLE) with
// the TLS configuration on two free loopback ports: tlsAddr speaks TLS from
// the start, startAddr plain IMAP offering STARTTLS. Neither accepts a
// login before TLS.
func MemServerTLS(t testing.TB, user, pass string, tc *tls.Config) (tlsAddr, startAddr string) {
	t.Helper()
	srv := memServer(t, user, pass, true, tc, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tls.NewListener(ln, tc)) //nolint:errcheck
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln2) //nolint:errcheck
	return ln.Addr().String(), ln2.Addr().String()
}

// memServer is the in-memory server; with tc it offers STARTTLS and
// refuses logins before TLS. It is closed at the end of the test.
func memServer(t testing.TB, user, pass string, idle bool, tc *tls.Config, folders []string) *imapserver.Server {
	mem := imapmemserver.New()
	u := imapmemserver.NewUser(user, pass)
	for _, f := range append([]string{"INBOX"}, folders...) {
		if err := u.Create(f, nil); err != nil {
			t.Fatal(err)
		}
	}
	mem.AddUser(u)
	caps := imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapUIDPlus: {}, imap.CapMove: {}}
	if idle {
		caps[imap.CapIdle] = struct{}{}
	}
	opts := &imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		InsecureAuth: tc == nil,
		TLSConfig:    tc,
		Caps:         caps,
	}
	if tc != nil {
		// Handshakes the tests make fail on purpose are no news.
		opts.Logger = log.New(io.Discard, "", 0)
	}
	srv := imapserver.New(opts)
	t.Cleanup(func() { srv.Close() })
	return srv
}
