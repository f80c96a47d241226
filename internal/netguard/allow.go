package netguard

import (
	"net/netip"
	"strconv"
	"strings"

	"docflow"
)

// HostAllowed reports whether an allow-list's entries admit a connection
// to host on port: an entry host (a name or an address, letter case
// aside) admits every port of that host, host:port that port only
// (docflow.ParseHostEntry). Entries that do not parse admit nothing: the
// settings check refuses them before they are used.
func HostAllowed(entries []string, host string, port int) bool {
	for _, e := range entries {
		if h, err := docflow.ParseHostEntry(e); err == nil && h.Allows(host, port) {
			return true
		}
	}
	return false
}

// parseLooseIP parses every spelling of an address a resolver might
// accept: standard IPv4 and IPv6 (bracketed, with a zone), and the
// inet_aton forms (decimal "2130706433", hex "0x7f000001", octal
// "0177.0.0.1", short "127.1"), so that none of them reaches DNS and
// slips past the checks.
func parseLooseIP(host string) (netip.Addr, bool) {
	h := strings.Trim(host, "[]")
	if i := strings.IndexByte(h, '%'); i >= 0 {
		h = h[:i]
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip, true
	}
	parts := strings.Split(h, ".")
	if len(parts) > 4 || h == "" {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" || strings.ContainsRune(p, '_') { // Go's digit separators are no part of an address
			return netip.Addr{}, false
		}
		v, err := strconv.ParseUint(p, 0, 32)
		if err != nil {
			if len(p) > 1 && p[0] == '0' && p[1] != 'x' && p[1] != 'X' {
				if v, err = strconv.ParseUint(p[1:], 8, 32); err != nil {
					return netip.Addr{}, false
				}
			} else {
				return netip.Addr{}, false
			}
		}
		vals[i] = v
	}
	// Every part but the last is one byte; the last fills the bytes left
	// (inet_aton: "127.1" is 127.0.0.1, "1.2.3.300" no address).
	var n uint64
	for _, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
		n = n<<8 | v
	}
	rest := uint(8 * (5 - len(vals)))
	last := vals[len(vals)-1]
	if last >= 1<<rest {
		return netip.Addr{}, false
	}
	n = n<<rest | last
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}
