package netguard

import (
	"net/netip"
	"testing"
)

// Allow-list entries: a host admits every port, host:port that port only;
// IPv6 takes a port in brackets.
func TestHostAllowed(t *testing.T) {
	list := []string{"hooks.corp", "mail.corp:993", "[fd00::1]:8443", "fd00::2", "10.0.0.5:8080"}
	for _, tc := range []struct {
		host string
		port int
		ok   bool
	}{
		{"hooks.corp", 443, true},
		{"HOOKS.corp", 8080, true},
		{"mail.corp", 993, true},
		{"mail.corp", 143, false},
		{"fd00::1", 8443, true},
		{"[fd00::1]", 8443, true},
		{"fd00::1", 443, false},
		{"fd00::2", 1, true},
		{"10.0.0.5", 8080, true},
		{"10.0.0.5", 80, false},
		{"other.corp", 443, false},
	} {
		if got := HostAllowed(list, tc.host, tc.port); got != tc.ok {
			t.Errorf("%s port %d: %v, want %v", tc.host, tc.port, got, tc.ok)
		}
	}
}

func TestParseLooseIP(t *testing.T) {
	cases := map[string]string{
		"127.0.0.1":        "127.0.0.1",
		"2130706433":       "127.0.0.1",
		"0x7f000001":       "127.0.0.1",
		"0177.0.0.1":       "127.0.0.1",
		"127.1":            "127.0.0.1",
		"0x7f.1":           "127.0.0.1",
		"10.1.65535":       "10.1.255.255",
		"169.254.169.254":  "169.254.169.254",
		"2852039166":       "169.254.169.254",
		"::1":              "::1",
		"[::1]":            "::1",
		"::ffff:127.0.0.1": "::ffff:127.0.0.1",
		"fe80::1%eth0":     "fe80::1",
	}
	for in, want := range cases {
		ip, ok := parseLooseIP(in)
		if !ok || ip != netip.MustParseAddr(want) {
			t.Errorf("%q: %v %v, want %s", in, ip, ok, want)
		}
	}
	for _, host := range []string{"example.com", "localhost", "1.2.3.4.5", "256.1.1.1", "0x1ffffffff", "08.1.1.1", "", "1..2",
		"1.2.3.300", "1.2.65536", "0x7f_00_00_01", "1_0.0.0.1"} {
		if ip, ok := parseLooseIP(host); ok {
			t.Errorf("%q parsed as %v", host, ip)
		}
	}
}
