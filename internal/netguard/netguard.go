// Package netguard is how docflow connects to the outside: the
// hosts and URLs they reach are user input, so the connection is refused
// when the host resolves to a private, loopback, link-local or otherwise
// internal address (the rule of process-url), unless an allow-list
// (INTEGRATION_ALLOWED_HOSTS, WEBHOOK_ALLOWED_HOSTS) admits the host on
// that port: an entry host admits every port, host:port that port only.
// The host is resolved once and the connection goes to exactly the
// address that was checked, so a second DNS answer cannot change it.
// Describe turns a failed connection into a fixed class of words, so what
// users see never carries text from the far side (see errors.go).
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"

	"docflow"
)

// ErrPrivate is the refusal of an internal address; its text is the
// detail API clients get.
var ErrPrivate = errors.New("access to private or internal addresses is not allowed")

// Dialer dials under the private-address rule.
type Dialer struct {
	// Allowed returns the allow-list's entries (read at each dial;
	// docflow.ParseHostEntry).
	Allowed func() []string
	// AllowPrivate admits every address: for endpoints an operator
	// configured (the OIDC issuer, an AI provider's URL), which may be
	// private by policy. The host is still resolved once and the
	// connection goes to the address resolved.
	AllowPrivate bool
	// Timeout bounds the connect (default 15 s).
	Timeout time.Duration
	// Resolver looks names up (default net.DefaultResolver).
	Resolver *net.Resolver
}

// DialContext connects to addr (host:port) over network ("tcp").
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
	if d.AllowPrivate || d.allowed(host, int(port)) {
		plain := net.Dialer{Timeout: timeout}
		return plain.DialContext(ctx, network, addr)
	}
	guard := ssrf.New(ssrf.WithAnyPort())
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip.Unmap()}
	} else {
		r := d.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		answers, err := r.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range answers {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				addrs = append(addrs, ip.Unmap())
			}
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no address for %s", host)
		}
	}
	for _, ip := range addrs {
		if guard.SafeAddr(ip) != nil {
			return nil, fmt.Errorf("%s (%s): %w", host, ip, ErrPrivate)
		}
	}
	dialer := net.Dialer{Timeout: timeout, Control: guard.Safe}
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

func (d Dialer) allowed(host string, port int) bool {
	return d.Allowed != nil && docflow.HostsAllow(d.Allowed(), host, port)
}
