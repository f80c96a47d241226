package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
)

// FuzzCheckURL: whatever the input, CheckURL either refuses it with a
// *URLError of a known kind, or accepts an absolute http(s) URL with a
// host, no user info and a valid port whose host, unless allowed, is not
// an internal address nor a localhost name; and what it accepts it
// accepts again as written back. Seeds in testdata/fuzz/FuzzCheckURL.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hook", "http://127.0.0.1:8080/", "http://2130706433/",
		"http://[::ffff:10.0.0.1]/", "http://allowed.test:8443/x", "http://user@h/", "ftp://x/", "http://h:99999/"} {
		f.Add(s)
	}
	rules := URLRules{Allowed: []string{"allowed.test", "10.0.0.9:8443"}}
	kinds := []error{ErrSyntax, ErrNotAbsolute, ErrScheme, ErrNoHost, ErrUserInfo, ErrPort, ErrPrivate}
	f.Fuzz(func(t *testing.T, raw string) {
		ctx := context.Background()
		u, err := CheckURL(ctx, raw, rules)
		if err != nil {
			var ue *URLError
			if !errors.As(err, &ue) || u != nil {
				t.Fatalf("%q: %v (%T), %v", raw, err, err, u)
			}
			for _, k := range kinds {
				if ue.Kind == k {
					return
				}
			}
			t.Fatalf("%q: unknown kind %v", raw, ue.Kind)
		}
		host := u.Hostname()
		if (u.Scheme != "http" && u.Scheme != "https") || host == "" || u.User != nil {
			t.Fatalf("%q accepted as %v", raw, u)
		}
		port := 80
		if u.Scheme == "https" {
			port = 443
		}
		if u.Port() != "" {
			if port, err = strconv.Atoi(u.Port()); err != nil || port < 1 || port > 65535 {
				t.Fatalf("%q accepted with port %q", raw, u.Port())
			}
		}
		if !HostAllowed(rules.Allowed, host, port) {
			if ip, ok := parseLooseIP(host); ok && !public(ip) {
				t.Fatalf("%q accepted: %s is internal", raw, ip)
			}
			if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
				t.Fatalf("%q accepted: %s", raw, host)
			}
		}
		if _, err := CheckURL(ctx, u.String(), rules); err != nil {
			t.Fatalf("%q accepted, but not as written back (%q): %v", raw, u.String(), err)
		}
	})
}

// FuzzHostEntry: an allow-list entry that parses admits exactly its host
// (letter case and brackets aside) on its port, or on every port without
// one; an entry that does not parse admits nothing. Seeds in
// testdata/fuzz/FuzzHostEntry.
func FuzzHostEntry(f *testing.F) {
	for _, s := range []struct {
		entry, host string
		port        int
	}{{"hooks.corp", "hooks.corp", 443}, {"mail.corp:993", "mail.corp", 143}, {"[fd00::1]:8443", "fd00::1", 8443},
		{"fd00::2", "[fd00::2]", 1}, {"http://x", "x", 80}, {"a:b:c", "a", 1}} {
		f.Add(s.entry, s.host, s.port)
	}
	f.Fuzz(func(t *testing.T, entry, host string, port int) {
		h, err := docflow.ParseHostEntry(entry)
		admits := HostAllowed([]string{entry}, host, port)
		if err != nil {
			if admits {
				t.Fatalf("%q refused (%v) yet admits %q:%d", entry, err, host, port)
			}
			return
		}
		if h.Host == "" || h.Port < 0 || h.Port > 65535 || strings.ContainsAny(h.Host, "/@ ?#\\[]") {
			t.Fatalf("%q parsed as %+v", entry, h)
		}
		want := strings.EqualFold(h.Host, strings.Trim(host, "[]")) && (h.Port == 0 || h.Port == port)
		if admits != want {
			t.Fatalf("%q (%+v) admits %q:%d: %v, want %v", entry, h, host, port, admits, want)
		}
		own := h.Port
		if own == 0 {
			own = 1
		}
		if !HostAllowed([]string{entry}, h.Host, own) {
			t.Fatalf("%q does not admit its own host %q:%d", entry, h.Host, own)
		}
	})
}

// fuzzResolver answers every name with the same addresses.
type fuzzResolver []net.IPAddr

func (r fuzzResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) { return r, nil }

// FuzzDialAddr: the Dialer's address check, whatever the address dialled,
// the resolver's answers and the allow-list entry: unless the entry
// admits the host and port, an address that net/netip calls loopback,
// private, link-local, multicast or unspecified (mapped into IPv6 or
// not, answered by the resolver or written as the host in any spelling)
// is refused with ErrPrivate before any connection; and ErrPrivate is
// never the answer for a host the entry admits or whose addresses are
// all public. The context is cancelled: nothing is ever connected.
// Seeds in testdata/fuzz/FuzzDialAddr.
func FuzzDialAddr(f *testing.F) {
	f.Add("example.com:443", []byte{93, 184, 216, 34}, "")
	f.Add("example.com:443", []byte{93, 184, 216, 34, 10, 0, 0, 1}, "")
	f.Add("127.1:80", []byte{}, "")
	f.Add("[::ffff:169.254.169.254]:80", []byte{}, "")
	f.Add("hooks.corp:8443", []byte{10, 0, 0, 1}, "hooks.corp:8443")
	f.Add("hooks.corp:8443", []byte{10, 0, 0, 1}, "hooks.corp:443")
	f.Add("0x7f000001:22", []byte{}, "")
	f.Add("h:1", []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}, "")
	f.Add("[fe80::1%eth0]:80", []byte{}, "")
	f.Fuzz(func(t *testing.T, addr string, raw []byte, allow string) {
		var answers []net.IPAddr
		if len(raw) == 16 {
			answers = append(answers, net.IPAddr{IP: net.IP(raw)})
		} else {
			for i := 0; i+4 <= len(raw) && i < 16; i += 4 {
				answers = append(answers, net.IPAddr{IP: net.IP(raw[i : i+4])})
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		d := Dialer{Allowed: func() []string { return []string{allow} }, Resolver: fuzzResolver(answers), Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if conn != nil {
			conn.Close()
			t.Fatalf("%q connected", addr)
		}
		host, portText, splitErr := net.SplitHostPort(addr)
		port, portErr := strconv.ParseUint(portText, 10, 16)
		if splitErr != nil || portErr != nil || port == 0 {
			if err == nil {
				t.Fatalf("%q: no error", addr)
			}
			return
		}
		var addrs []netip.Addr
		if ip, ok := parseLooseIP(host); ok {
			addrs = []netip.Addr{ip}
		} else {
			for _, a := range answers {
				if ip, ok := netip.AddrFromSlice(a.IP); ok {
					addrs = append(addrs, ip)
				}
			}
		}
		internal, public := false, true
		for _, ip := range addrs {
			u := ip.Unmap()
			if u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsLinkLocalMulticast() ||
				u.IsInterfaceLocalMulticast() || u.IsMulticast() || u.IsUnspecified() {
				internal = true
			}
			if !publicAddr(u) {
				public = false
			}
		}
		allowed := HostAllowed([]string{allow}, host, int(port))
		refused := errors.Is(err, ErrPrivate)
		if !allowed && internal && !refused {
			t.Fatalf("%q (answers %v, allow %q): %v, want ErrPrivate", addr, answers, allow, err)
		}
		if refused && (allowed || (public && len(addrs) > 0)) {
			t.Fatalf("%q (answers %v, allow %q) refused: %v", addr, answers, allow, err)
		}
	})
}

// publicAddr is the package's rule, named apart from the local variable.
func publicAddr(ip netip.Addr) bool { return public(ip) }
