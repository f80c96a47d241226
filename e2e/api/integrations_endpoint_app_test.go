package api_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"docflow/integrations/imap"
	"docflow/integrations/imap/imaptest"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// TestStoredCredentialsStayWithTheirEndpoint: a stored mailbox password
// is never sent anywhere but the server it was given for. A test with
// integration_id and another host, port or security, and an update that
// moves the host, are refused (422 naming credentials) before any
// connection: a raw TCP server standing in for an attacker's IMAP server
// hears nothing. Given the credentials again, both proceed, with the
// credentials given. What users see of the far side's refusal is a fixed
// class, and the integration's actions are in the audit log, without
// credentials.
func TestStoredCredentialsStayWithTheirEndpoint(t *testing.T) {
	t.Parallel()
	const storedPW, typedPW = "stored-S3cret-pw", "typed-again-pw"
	addr := imaptest.MemServer(t, "alice", storedPW, true)
	_, port, _ := net.SplitHostPort(addr)
	// The attacker's server: same port, another loopback address; and one
	// on another port of the real server's address.
	trap := imaptest.StartTrap(t, net.JoinHostPort("127.0.0.2", port), imaptest.TrapIMAPBanner)
	portTrap := imaptest.StartTrap(t, "127.0.0.1:0", imaptest.TrapIMAPBanner)
	_, trapPort, _ := net.SplitHostPort(portTrap.Addr)
	a := apptest.New(t, apptest.Options{Role: "serve", Env: map[string]string{"INTEGRATION_ALLOWED_HOSTS": "127.0.0.1,127.0.0.2"}})
	c := newClient(t, a.URL)
	leaks := func(body string) {
		t.Helper()
		for _, s := range []string{storedPW, typedPW, imaptest.TrapMark} {
			if strings.Contains(body, s) {
				t.Fatalf("answer carries %q: %s", s, body)
			}
		}
	}
	body := c.must(201, "POST", "/api/integrations/", fmt.Sprintf(`{"direction": "SOURCE", "integration_type": "IMAP", "name": "Scans",
		"config": {"host": "127.0.0.1", "port": %s, "security": "none", "poll_interval": 10},
		"credentials": {"username": "alice", "password": %q}}`, port, storedPW))
	var in struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal([]byte(body), &in)
	path := fmt.Sprintf("/api/integrations/%d", in.ID)
	// The source runs: a change that went through would have it connect
	// to the new host with the stored password.
	testsupport.WaitFor(t, 3*time.Minute, "the source connected", func() bool {
		return strings.Contains(c.must(200, "GET", path, nil), `"state":"connected"`)
	})

	refused := func(method, url, body string) {
		t.Helper()
		status, b := c.do(method, url, body)
		leaks(b)
		if status != 422 || !strings.Contains(b, `"field":"credentials"`) || !strings.Contains(b, "credentials given again") {
			t.Fatalf("%s %s %s: %d %s, want 422 asking for the credentials", method, url, body, status, b)
		}
	}
	id := fmt.Sprint(in.ID)
	refused("POST", "/api/integrations/test", `{"integration_id": `+id+`, "config": {"host": "127.0.0.2"}}`)
	refused("POST", "/api/integrations/test", `{"integration_id": `+id+`, "config": {"port": `+trapPort+`}}`)
	refused("POST", "/api/integrations/test", `{"integration_id": `+id+`, "config": {"security": "tls"}}`)
	refused("POST", "/api/integrations/test", `{"integration_id": `+id+`, "config": {"host": "127.0.0.2", "allow_insecure": true}}`)
	refused("PUT", path, `{"config": {"host": "127.0.0.2"}}`)
	refused("PUT", path, `{"config": {"port": `+trapPort+`}, "is_active": false}`)
	// Other keys change freely.
	c.must(200, "PUT", path, `{"config": {"poll_interval": 30}, "name": "Scans (slow)"}`)
	time.Sleep(time.Second) // several scans of the supervisor
	for _, tr := range []*imaptest.Trap{trap, portTrap} {
		if tr.Connections() != 0 || tr.Received(storedPW) {
			t.Fatalf("the trap at %s was reached (%d connections; password %v)", tr.Addr, tr.Connections(), tr.Received(storedPW))
		}
	}
	if b := c.must(200, "GET", path, nil); !strings.Contains(b, `"host":"127.0.0.1"`) || !strings.Contains(b, `"state":"connected"`) {
		t.Fatalf("after refused changes: %s", b)
	}

	// Given the credentials again, the test goes where it is told, with
	// what it was given; the far side's refusal reads in fixed words.
	b := c.must(200, "POST", "/api/integrations/test", `{"integration_id": `+id+`, "config": {"host": "127.0.0.2"},
		"credentials": {"username": "alice", "password": "`+typedPW+`"}}`)
	leaks(b)
	var res struct {
		Success bool   `json:"success"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal([]byte(b), &res)
	if res.Success || res.Message != imap.FailLogin || !trap.Received(typedPW) || trap.Received(storedPW) {
		t.Fatalf("test with credentials given again: %s (trap heard the typed password: %v, the stored one: %v)",
			b, trap.Received(typedPW), trap.Received(storedPW))
	}
	// And the update goes through: the source follows it, and its
	// last_error is the class, not the trap's words.
	leaks(c.must(200, "PUT", path, `{"config": {"host": "127.0.0.2"}, "credentials": {"username": "alice", "password": "`+typedPW+`"}}`))
	testsupport.WaitFor(t, 3*time.Minute, "the moved source's login refused", func() bool {
		b := c.must(200, "GET", path, nil)
		leaks(b)
		return strings.Contains(b, fmt.Sprintf(`"last_error":%q`, imap.FailLogin))
	})
	if trap.Received(storedPW) {
		t.Fatal("the stored password reached the trap")
	}
	c.must(204, "DELETE", path, nil)

	log := c.must(200, "GET", "/api/admin/audit-log?per_page=200", nil)
	leaks(log)
	for _, want := range []string{`"action":"integration.create"`, `"action":"integration.update"`, `"action":"integration.test"`,
		`"action":"integration.delete"`, `"target":"integration:` + id + `"`, "host=127.0.0.2", "changed config.host, credentials"} {
		if !strings.Contains(log, want) {
			t.Fatalf("audit log lacks %s: %s", want, log)
		}
	}
}
