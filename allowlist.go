package docflow

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// HostEntry is one entry of an outbound allow-list (WEBHOOK_ALLOWED_HOSTS,
// INTEGRATION_ALLOWED_HOSTS, URL_FETCH_ALLOWED_HOSTS): the hosts that
// connections may reach although they resolve to private, loopback or
// internal addresses (internal/netguard applies them). Port 0 means every
// port.
type HostEntry struct {
	Host string
	Port int
}

// ParseHostEntry reads one allow-list entry: a host name or IP address
// (every port), or host:port (that port only). An IPv6 address is written
// bare or in brackets, and with a port only in brackets ([fd00::1]:8443).
// Scheme, path, user info and spaces are refused.
func ParseHostEntry(e string) (HostEntry, error) {
	e = strings.TrimSpace(e)
	if e == "" {
		return HostEntry{}, fmt.Errorf("empty entry")
	}
	bare := e
	if strings.HasPrefix(e, "[") && strings.HasSuffix(e, "]") {
		bare = e[1 : len(e)-1]
	}
	if net.ParseIP(bare) != nil {
		return HostEntry{Host: bare}, nil
	}
	bad := fmt.Errorf("%q is not a host or host:port (no scheme, path or user)", e)
	if strings.ContainsAny(e, "/@ ?#\\") {
		return HostEntry{}, bad
	}
	host, port := e, 0
	if strings.Contains(e, ":") {
		h, p, err := net.SplitHostPort(e)
		if err != nil {
			return HostEntry{}, bad
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return HostEntry{}, fmt.Errorf("%q: port must be 1–65535", e)
		}
		host, port = h, n
	}
	if host == "" || (strings.ContainsAny(host, "[]:") && net.ParseIP(host) == nil) {
		return HostEntry{}, bad
	}
	return HostEntry{Host: host, Port: port}, nil
}

// Allows reports whether the entry admits a connection to host on port:
// the same host (letter case aside), and the entry's port unless it has
// none.
func (h HostEntry) Allows(host string, port int) bool {
	return strings.EqualFold(h.Host, strings.Trim(host, "[]")) && (h.Port == 0 || h.Port == port)
}

// AllowList accepts a comma-separated allow-list of ParseHostEntry
// entries: hosts, or host:port.
func AllowList() SettingCheck {
	return func(v string) error {
		for _, p := range strings.Split(v, ",") {
			if strings.TrimSpace(p) == "" {
				continue
			}
			if _, err := ParseHostEntry(p); err != nil {
				return err
			}
		}
		return nil
	}
}
