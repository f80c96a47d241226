package netguard

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

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
