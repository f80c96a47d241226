package http

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// Slow clients. Every connection must make progress or go:
//
//   - HTTP_READ_HEADER_TIMEOUT bounds the wait for a request's headers,
//     from the connection's opening (or, on a kept-alive connection, from
//     the request's first byte): headers sent a byte at a time do not
//     extend it (fasthttp's ReadTimeout).
//   - HTTP_BODY_TIMEOUT then bounds the body: a JSON body must arrive
//     within it; an upload's streamed body only has to keep arriving, each
//     read that brings data moves the deadline on (progressBody), so a
//     large file on a slow line is not cut off by its total time.
//   - HTTP_WRITE_TIMEOUT bounds the writing of a response: a client that
//     stops reading is dropped. A streamed body (a download, a ZIP) only
//     has to keep being taken: each write of it moves the deadline on
//     (writeProgress), so a large file on a slow line is not cut off.
//     It must be taken at HTTP_MIN_WRITE_RATE bytes a second at least,
//     averaged over each HTTP_MIN_WRITE_RATE_WINDOW (a minute): a client
//     taking a few bytes now and then would otherwise hold a connection,
//     a goroutine and an open file for days.
//   - HTTP_IDLE_TIMEOUT closes a kept-alive connection with no next request.
//   - HTTP_MAX_CONNS_PER_IP caps the connections open at once from one
//     client address (an IPv6 /64 counts as one); the next is answered 429
//     and closed. Connections from TRUSTED_PROXIES are not capped: behind a
//     proxy every client shares its address, and the proxy is where to cap.
//
// They are read when the server is built (NewServer).

// connSettings are the slow-client settings in effect.
type connSettings struct {
	header, body, write, idle time.Duration
	perIP                     int
	trusted                   []string // TRUSTED_PROXIES (restart required)
	// minRate is HTTP_MIN_WRITE_RATE in bytes a second (0: none),
	// averaged over rateWindow.
	minRate    int64
	rateWindow time.Duration
}

func (s *Server) connSettings() connSettings {
	secs := func(h docflow.DurationSetting) time.Duration { return docflow.Positive(h, s.cfg.Settings) }
	perIP := docflow.HTTPMaxConnsPerIP.Get(s.cfg.Settings)
	return connSettings{
		header:     secs(docflow.HTTPReadHeaderTimeout),
		body:       secs(docflow.HTTPBodyTimeout),
		write:      secs(docflow.HTTPWriteTimeout),
		idle:       secs(docflow.HTTPIdleTimeout),
		perIP:      max(perIP, 0),
		trusted:    docflow.TrustedProxies.Get(s.cfg.Settings),
		minRate:    max(docflow.HTTPMinWriteRate.Get(s.cfg.Settings), 0),
		rateWindow: secs(docflow.HTTPMinWriteRateWindow),
	}
}

// applyConnSettings sets the server's timeouts.
func (s *Server) applyConnSettings(srv *fasthttp.Server) {
	cs := s.conns
	srv.ReadTimeout = cs.header
	srv.WriteTimeout = cs.write
	srv.IdleTimeout = cs.idle
	srv.HeaderReceived = func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
		// Headers are in: the body's own deadline replaces theirs.
		return fasthttp.RequestConfig{ReadTimeout: cs.body}
	}
}

// progressBody returns the streamed request body with a deadline by
// progress: each read that brings data gives the body another
// HTTP_BODY_TIMEOUT. nil when the request has no body stream.
func (s *Server) progressBody(c *fasthttp.RequestCtx) io.Reader {
	r := c.RequestBodyStream()
	if r == nil || s.conns.body <= 0 {
		return r
	}
	return &progressReader{c: c, r: r, timeout: s.conns.body}
}

type progressReader struct {
	c       *fasthttp.RequestCtx
	r       io.Reader
	timeout time.Duration
	moved   time.Time
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	// Moving the deadline costs a timer update; a few times per timeout
	// keeps it within an eighth of the timeout of exact.
	if now := time.Now(); n > 0 && now.Sub(p.moved) >= p.timeout/8 {
		p.moved = now
		if derr := p.c.SetReadDeadline(now.Add(p.timeout)); derr != nil && err == nil {
			err = derr
		}
	}
	return n, err
}

// connLimitListener caps the connections open at once per client address.
// NOTE: fasthttp's MaxConnsPerIP would count a trusted proxy's
// connections as one client's; this one lets those through.
type connLimitListener struct {
	net.Listener
	max     int
	trusted []string
	logf    func(format string, args ...any)

	mu       sync.Mutex
	open     map[string]int
	loggedAt time.Time
}

func (s *Server) limitConns(ln net.Listener) net.Listener {
	if s.conns.perIP <= 0 {
		return ln
	}
	return &connLimitListener{Listener: ln, max: s.conns.perIP, trusted: s.conns.trusted, open: map[string]int{},
		logf: func(format string, args ...any) { s.log.Warn().Msg(fmt.Sprintf(format, args...)) }}
}

// connKey is the address a connection counts against (addrKey).
func connKey(addr net.Addr) (string, net.IP) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok {
		return "", nil
	}
	return addrKey(ta.IP), ta.IP
}

// addrKey is the client a per-address limit counts against: an IPv4
// address, or an IPv6 address's /64, since one client (one home line, one
// server) is handed a whole /64 and can use every address in it. The
// connection cap, the rate limits, the failed-token limit and the
// sign-in back-off all key on it.
func addrKey(ip net.IP) string {
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// Accept returns the next connection within the cap; one over it is
// answered 429 and closed here.
func (l *connLimitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, ip := connKey(c.RemoteAddr())
		if key == "" || ipIn(ip, l.trusted) {
			return c, nil
		}
		l.mu.Lock()
		if l.open[key] >= l.max {
			logIt := time.Since(l.loggedAt) > time.Minute
			if logIt {
				l.loggedAt = time.Now()
			}
			l.mu.Unlock()
			if logIt {
				l.logf("connections from %s exceed HTTP_MAX_CONNS_PER_IP=%d; refusing more", key, l.max)
			}
			refuseConn(c, l.max)
			continue
		}
		l.open[key]++
		l.mu.Unlock()
		return &limitedConn{Conn: c, release: func() { l.release(key) }}, nil
	}
}

func (l *connLimitListener) release(key string) {
	l.mu.Lock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
	l.mu.Unlock()
}

// refuseConn answers a connection over the cap and closes it. The answer
// fits the socket's send buffer; the deadline covers a peer that is gone.
func refuseConn(c net.Conn, max int) {
	body := fmt.Sprintf(`{"detail":"Too many connections from your address (at most %d at once)"}`, max)
	c.SetWriteDeadline(time.Now().Add(time.Second)) //nolint:errcheck
	fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\nRetry-After: 1\r\nConnection: close\r\n\r\n%s", len(body), body)
	c.Close()
}

// limitedConn gives its slot back once, when closed.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// SetLinger is the TCP connection's (writeProgress resets a connection
// it cuts off).
func (c *limitedConn) SetLinger(sec int) error {
	if l, ok := c.Conn.(interface{ SetLinger(int) error }); ok {
		return l.SetLinger(sec)
	}
	return nil
}

// ReadFrom keeps the TCP connection's sendfile path for file responses.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
