// Package netguard is how docflow connects to the outside, and the only
// package that does. The hosts and URLs that users give (webhooks,
// automation hooks, process-url, integrations, notification channels)
// would otherwise let anyone with a token reach the service's own
// network, so a connection is refused when its host resolves to a
// private, loopback, link-local, metadata or otherwise internal address,
// unless an allow-list (WEBHOOK_ALLOWED_HOSTS, INTEGRATION_ALLOWED_HOSTS,
// URL_FETCH_ALLOWED_HOSTS) admits the host on that port: an entry host
// admits every port, host:port that port only (HostAllowed).
//
// The host is resolved once, every answer is checked, and the connection
// goes to exactly the address that was checked, so a second DNS answer
// cannot change it (Dialer). Client is the one HTTP client over it, with
// a redirect policy and no proxy; CheckURL checks a URL a user gives
// before it is kept or used. Endpoints an operator configured (the OIDC
// issuer, an AI provider, the SMTP server, the Kafka brokers) may be
// private by policy: they dial through the same Dialer with AllowPrivate.
// Describe turns a failed connection into a fixed class of words, so what
// users see never carries text from the far side (errors.go).
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"code.dny.dev/ssrf"
)

// ErrPrivate is the refusal of an internal address; its text is the
// detail API clients get.
var ErrPrivate = errors.New("access to private or internal addresses is not allowed")

// guard holds the address rule: code.dny.dev/ssrf's lists of the
// addresses that are not public (private, loopback, link-local, shared,
// documentation, multicast, the cloud metadata address, IPv6's
// equivalents and IPv4 addresses mapped or translated into IPv6), on any
// port. It is never changed after it is built.
var guard = ssrf.New(ssrf.WithAnyPort())

// public reports whether ip is a public address, one the rule lets any
// connection reach.
func public(ip netip.Addr) bool { return guard.SafeAddr(ip.Unmap()) == nil }

// Resolver looks host names up; *net.Resolver is one.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Dialer dials under the private-address rule.
type Dialer struct {
	// Allowed returns the allow-list's entries (read at each dial;
	// docflow.ParseHostEntry).
	Allowed func() []string
	// AllowPrivate admits every address: for endpoints an operator
	// configured (the OIDC issuer, an AI provider's URL, the SMTP server),
	// which may be private by policy.
	AllowPrivate bool
	// Timeout bounds the connect (default 15 s).
	Timeout time.Duration
	// KeepAlive is the TCP keep-alive period (0: the system's default;
	// negative: none).
	KeepAlive time.Duration
	// Resolver looks names up (default net.DefaultResolver).
	Resolver Resolver
}

// DialContext connects to addr (host:port) over network ("tcp"). A host
// refused by the rule is an error wrapping ErrPrivate; a name that does
// not resolve is the resolver's *net.DNSError.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("port %q is not a port", portText)
	}
	if d.AllowPrivate || (d.Allowed != nil && HostAllowed(d.Allowed(), host, int(port))) {
		plain := net.Dialer{Timeout: timeout, KeepAlive: d.KeepAlive}
		return plain.DialContext(ctx, network, addr)
	}
	addrs, err := d.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	for _, ip := range addrs {
		if !public(ip) {
			return nil, fmt.Errorf("%s (%s): %w", host, ip, ErrPrivate)
		}
	}
	// The socket's address is checked once more as it is connected.
	dialer := net.Dialer{Timeout: timeout, KeepAlive: d.KeepAlive, Control: guard.Safe}
	var last error
	for _, ip := range addrs {
		conn, err := dialer.DialContext(ctx, network, netip.AddrPortFrom(ip, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, ssrf.ErrProhibitedIP) {
			return nil, fmt.Errorf("%s (%s): %w", host, ip, ErrPrivate)
		}
		last = err
	}
	return nil, last
}

// resolve returns host's addresses: host itself when it is an address in
// any spelling a resolver would take (parseLooseIP), else the resolver's
// answers, at least one.
func (d Dialer) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, ok := parseLooseIP(host); ok {
		return []netip.Addr{ip.Unmap()}, nil
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	answers, err := r.LookupIPAddr(ctx, host)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	for _, a := range answers {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			addrs = append(addrs, ip.Unmap())
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no address for %s", host)
	}
	return addrs, nil
}
