package http

import (
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// probeRequest is a request ctx for path as fasthttp hands it to the root
// handler, from a loopback client.
func probeRequest(method, path string, headers ...string) *fasthttp.RequestCtx {
	var req fasthttp.Request
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.Header.SetHost("127.0.0.1:8000")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	c := &fasthttp.RequestCtx{}
	c.Init(&req, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}, nil)
	return c
}

// serveAgain runs h on c as the server runs it on a kept-alive
// connection's next request: the response and the user values reset.
func serveAgain(h fasthttp.RequestHandler, c *fasthttp.RequestCtx) {
	c.Response.Reset()
	c.ResetUserValues()
	h(c)
}

// TestLiveProbeAllocatesNothing: the liveness probe, which orchestrators
// and load balancers send all the time, is answered without allocating.
// (Not parallel: AllocsPerRun counts the whole process's allocations.)
func TestLiveProbeAllocatesNothing(t *testing.T) {
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	h := e.Server.Handler()
	for _, path := range []string{LivePath, LivePath + "/"} {
		c := probeRequest("GET", path)
		serveAgain(h, c)
		if c.Response.StatusCode() != 200 || string(c.Response.Body()) != `{"status":"ok"}`+"\n" {
			t.Fatalf("%s: %d %s", path, c.Response.StatusCode(), c.Response.Body())
		}
		if n := testing.AllocsPerRun(200, func() { serveAgain(h, c) }); n > 0 {
			t.Fatalf("%s: %.1f allocations per probe", path, n)
		}
	}
}

func BenchmarkLiveProbe(b *testing.B) {
	e := newTestEnv(b, map[string]string{"AUTH_ENABLED": "true"})
	h := e.Server.Handler()
	c := probeRequest("GET", LivePath)
	b.ReportAllocs()
	for b.Loop() {
		serveAgain(h, c)
	}
}

// BenchmarkBareHandler is what make bench compares the probe with.
func BenchmarkBareHandler(b *testing.B) {
	body := []byte(`{"status":"ok"}` + "\n")
	h := func(c *fasthttp.RequestCtx) {
		c.SetContentType("application/json")
		c.SetBody(body)
	}
	c := probeRequest("GET", LivePath)
	b.ReportAllocs()
	for b.Loop() {
		serveAgain(h, c)
	}
}

// BenchmarkTokenList is GET /api/api-tokens/ with a bearer token through
// the whole middleware, in process (the database round trip included).
func BenchmarkTokenList(b *testing.B) {
	e := newTestEnv(b, map[string]string{"AUTH_ENABLED": "true"})
	tok := e.token("alice")
	h := e.Server.Handler()
	c := probeRequest("GET", "/api/api-tokens/", "Authorization", "Bearer "+tok)
	serveAgain(h, c)
	if c.Response.StatusCode() != 200 {
		b.Fatalf("%d %s", c.Response.StatusCode(), c.Response.Body())
	}
	b.ReportAllocs()
	for b.Loop() {
		serveAgain(h, c)
	}
}

// TestTrustedProxiesGiveTheForwardedClient: behind a proxy listed in
// TRUSTED_PROXIES (an address or a network) the client is the right-most
// X-Forwarded-For address that is not a proxy; a peer not listed is the
// client itself, whatever it forwards; a change of the setting applies to
// the next request.
func TestTrustedProxiesGiveTheForwardedClient(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	a := e.Server.auth
	addr := func(xff string) string {
		return a.clientAddr(probeRequest("GET", "/api/files", "X-Forwarded-For", xff)).String()
	}
	const xff = "198.51.100.9, 203.0.113.7, 127.0.0.9"
	for _, tc := range []struct{ proxies, want string }{
		{"", "127.0.0.1"},
		{"10.0.0.0/8", "127.0.0.1"},
		{"127.0.0.1", "127.0.0.9"},
		{"127.0.0.0/8", "203.0.113.7"},
		{"::1, 127.0.0.0/8, 203.0.113.7", "198.51.100.9"},
	} {
		e.SetEnv("TRUSTED_PROXIES", tc.proxies)
		if got := addr(xff); got != tc.want {
			t.Fatalf("TRUSTED_PROXIES=%q: client %s, want %s", tc.proxies, got, tc.want)
		}
	}
}
