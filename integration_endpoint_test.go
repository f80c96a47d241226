package docflow

import (
	"slices"
	"testing"
)

// The catalogue marks where each type connects and whom it trusts there;
// a type added later inherits the mark for its hosts, ports, URLs, CAs
// and host keys.
func TestEndpointKeysOfTheCatalogue(t *testing.T) {
	want := map[string][]string{
		IntegrationIMAP:      {"host", "port", "security", "ca_certificate"},
		IntegrationWebDAV:    {"url", "ca_certificate"},
		IntegrationNextcloud: {"url", "ca_certificate"},
		IntegrationS3:        {"endpoint", "ca_certificate"},
		IntegrationSFTP:      {"host", "port", "host_key_fingerprint"},
		IntegrationFTP:       {"host", "port", "tls", "ca_certificate"},
		IntegrationEmail:     {"ca_certificate"},
		IntegrationPaperless: {"url", "ca_certificate"},
		IntegrationLocal:     nil,
		IntegrationDropbox:   nil,
	}
	for typ, keys := range want {
		it, _ := LookupIntegrationType(typ)
		var got []string
		for _, k := range it.Config {
			if k.Endpoint {
				got = append(got, k.Name)
			}
		}
		if !slices.Equal(got, keys) {
			t.Errorf("%s endpoint keys %v, want %v", typ, got, keys)
		}
	}
}

// A change that moves the endpoint of an integration with stored
// credentials needs the credentials again; other changes, changes with
// credentials, and integrations without stored ones do not.
func TestCheckEndpointChange(t *testing.T) {
	imap, _ := LookupIntegrationType(IntegrationIMAP)
	stored := map[string]any{"host": "imap.example.com", "port": float64(993), "security": "tls", "folder": "INBOX", "poll_interval": float64(60)}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for key, val := range stored {
			m[key] = val
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name             string
		next             map[string]any
		hasStored, given bool
		refused          bool
	}{
		{"same config (numbers decoded otherwise)", with("port", int64(993)), true, false, false},
		{"folder and interval", with("poll_interval", int64(300)), true, false, false},
		{"host", with("host", "imap.attacker.example"), true, false, true},
		{"host in other letters", with("host", "IMAP.example.com"), true, false, true},
		{"port", with("port", int64(143)), true, false, true},
		{"security", with("security", "none"), true, false, true},
		{"CA added", with("ca_certificate", "-----BEGIN CERTIFICATE-----"), true, false, true},
		{"host with credentials", with("host", "imap.other.example"), true, true, false},
		{"host without stored credentials", with("host", "imap.other.example"), false, false, false},
	} {
		err := CheckEndpointChange(imap, stored, tc.next, tc.hasStored, tc.given)
		if (err != nil) != tc.refused {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if err != nil && (ErrorCode(err) != EINVALID || !slices.Contains(fieldsOf(t, err), "credentials")) {
			t.Errorf("%s: %v (want 422 on credentials)", tc.name, err)
		}
	}
}
