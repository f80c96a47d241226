package http

import (
	"testing"
)

// TestSingleUserModeServesOnlyItsHosts: without authentication, a request
// addressed to another host name (a page whose name was rebound to this
// address) is refused, whatever it asks; IP addresses, localhost, BASE_URL's
// host and ALLOWED_HOSTS are served, the probes answer any host, and with
// authentication on the Host header is not checked.
func TestSingleUserModeServesOnlyItsHosts(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"BASE_URL": "http://docs.example.test:8000", "ALLOWED_HOSTS": "mypc.lan, other.lan"})
	const path = "/api/api-tokens/"
	for _, c := range []struct {
		host string
		want int
	}{
		{"evil.example", 403},
		{"evil.example:8000", 403},
		{"docs.example.test.evil.example", 403},
		{"127.0.0.1", 200},
		{"127.0.0.1:8000", 200},
		{"[::1]:8000", 200},
		{"192.168.1.20:8000", 200},
		{"localhost:8000", 200},
		{"LOCALHOST.", 200},
		{"app.localhost", 200},
		{"docs.example.test:8000", 200},
		{"Docs.Example.Test", 200},
		{"mypc.lan", 200},
		{"other.lan:8000", 200},
	} {
		if got := doHost(e, "GET", path, c.host, "").StatusCode; got != c.want {
			t.Errorf("GET %s with Host %q: %d, want %d", path, c.host, got, c.want)
		}
	}
	if got := doHost(e, "POST", path, "evil.example", `{"name":"x"}`, "Content-Type", "application/json",
		"Origin", "http://evil.example").StatusCode; got != 403 {
		t.Errorf("a rebound page's POST: %d, want 403", got)
	}
	if got := doHost(e, "GET", "/api/diagnostic/healthz/live", "docflow-api", "").StatusCode; got != 200 {
		t.Errorf("liveness probe by a service name: %d, want 200", got)
	}

	// With authentication on, a rebound page has no credentials: the host
	// is not what protects the API.
	e.SetEnv("AUTH_ENABLED", "true")
	if got := doHost(e, "GET", path, "evil.example", "").StatusCode; got != 401 {
		t.Errorf("GET with Host evil.example, auth on, no credentials: %d, want 401", got)
	}
}
