package docflow

import "testing"

// Allow-list entries: a host admits every port, host:port that port only;
// IPv6 takes a port in brackets; anything with a scheme, path or user is
// refused by the settings check.
func TestAllowListEntries(t *testing.T) {
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
		if got := HostsAllow(list, tc.host, tc.port); got != tc.ok {
			t.Errorf("%s port %d: %v, want %v", tc.host, tc.port, got, tc.ok)
		}
	}
	check := AllowList()
	if err := check(" hooks.corp , mail.corp:993,[fd00::1]:8443, fd00::2,127.0.0.1 "); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://hooks.corp", "hooks.corp/path", "user@hooks.corp", "hooks.corp:0",
		"hooks.corp:70000", "hooks.corp:https", "a:b:c", "[fd00::1", ":443"} {
		if check(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
