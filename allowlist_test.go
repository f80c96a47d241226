package docflow

import "testing"

// Allow-list entries: host or host:port, IPv6 taking a port in brackets;
// anything with a scheme, path or user is refused by the settings check.
// (What the entries admit is tested with netguard.HostAllowed.)
func TestAllowListEntries(t *testing.T) {
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
