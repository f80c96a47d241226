package imap_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/netguard"
)

func trapIntegration(addr, security string) *docflow.Integration {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return &docflow.Integration{ID: 9, IntegrationType: "IMAP", Direction: docflow.DirectionSource,
		Config:      map[string]any{"host": host, "port": p, "security": security},
		Credentials: map[string]string{"username": "alice", "password": "s3cret-pw"}}
}

// What a test says of a failure is the client's own words: a server's
// banner, its refusal, its protocol noise and its certificate's names never
// reach the user; the classes tell the cases apart.
func TestTesterSaysNoServerText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tester := imap.Tester{Dial: local, Timeout: 5 * time.Second}
	imapTrap := imaptest.StartTrap(t, "127.0.0.1:0", imaptest.TrapIMAPBanner)
	sshTrap := imaptest.StartTrap(t, "127.0.0.1:0", "SSH-2.0-OpenSSH_9.2p1 "+imaptest.TrapMark)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	untrusted := imaptest.NewCA(t)
	tlsAddr, _ := imaptest.MemServerTLS(t, "alice", "s3cret-pw", untrusted.ServerTLS(t, "127.0.0.1"))

	for _, tc := range []struct {
		name, addr, security, want string
	}{
		{"login refused by an IMAP server", imapTrap.Addr, "none", imap.FailLogin},
		{"not an IMAP server", sshTrap.Addr, "none", netguard.FailProtocol},
		{"nothing listening", closedAddr, "none", netguard.FailConnect},
		{"TLS to a plain server", imapTrap.Addr, "tls", netguard.FailTLS},
		{"certificate of an unknown CA", tlsAddr, "tls", imap.FailUntrusted},
	} {
		ok, msg := tester.TestIntegration(ctx, trapIntegration(tc.addr, tc.security))
		if ok || msg != tc.want {
			t.Errorf("%s: %v %q, want %q", tc.name, ok, msg, tc.want)
		}
		for _, leak := range []string{imaptest.TrapMark, "intranet-db-01", "OpenSSH", "docflow test CA", "s3cret-pw"} {
			if strings.Contains(msg, leak) {
				t.Errorf("%s: message %q carries %q", tc.name, msg, leak)
			}
		}
	}
	if !imapTrap.Received("s3cret-pw") {
		t.Fatal("the login never reached the IMAP trap: the refusal was not the server's")
	}
}
