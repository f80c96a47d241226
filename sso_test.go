package docflow

import (
	"errors"
	"testing"
)

// TestResolveSSOSignIn: the rule of which user an SSO sign-in is.
func TestResolveSSOSignIn(t *testing.T) {
	const iss = "https://idp/"
	in := SSOSignIn{Issuer: iss, Subject: "s1", Email: "ann@example.com"}
	unverified := SSOSignIn{Issuer: iss, Subject: "s1"}
	bound := &SSOUser{UserID: "ann@example.com", Issuer: iss, Subject: "s1", Bound: true}
	other := &SSOUser{UserID: "ann@example.com", Issuer: iss, Subject: "s2", Bound: true}
	legacy := &SSOUser{UserID: "ann@example.com", Issuer: iss, Subject: "old"}
	local := func(active bool, link *SSOLink) *SSOLocalAccount {
		return &SSOLocalAccount{ID: 7, Email: "Ann@Example.com", Active: active, Link: link}
	}
	pending := &SSOLink{LocalUserID: 7, Issuer: iss}
	for _, c := range []struct {
		name    string
		in      SSOSignIn
		f       SSOFacts
		want    string
		bind    int64
		changed bool // refused as a changed subject
		refused bool
	}{
		{name: "new", in: in, want: "ann@example.com"},
		{name: "new without a verified address", in: unverified, want: "s1"},
		{name: "bound", in: in, f: SSOFacts{Bound: bound, Holder: bound}, want: "ann@example.com"},
		{name: "bound keeps its id under a new address", in: SSOSignIn{Issuer: iss, Subject: "s1", Email: "new@example.com"},
			f: SSOFacts{Bound: bound, Holder: bound}, want: "ann@example.com"},
		{name: "another subject", in: in, f: SSOFacts{Holder: other}, refused: true, changed: true},
		{name: "another issuer", in: SSOSignIn{Issuer: "https://other/", Subject: "s1", Email: "ann@example.com"},
			f: SSOFacts{Holder: bound}, refused: true, changed: true},
		{name: "legacy bound now", in: in, f: SSOFacts{Holder: legacy}, want: "ann@example.com"},
		{name: "admin user id", in: SSOSignIn{Issuer: iss, Subject: "admin"}, f: SSOFacts{AdminUserID: "admin"}, refused: true},
		{name: "local unlinked", in: in, f: SSOFacts{Local: local(true, nil)}, refused: true},
		{name: "local unlinked, legacy merge", in: in, f: SSOFacts{Local: local(true, nil), Holder: legacy}, refused: true},
		{name: "local deactivated", in: in, f: SSOFacts{Local: local(false, pending)}, refused: true},
		{name: "local pending link", in: in, f: SSOFacts{Local: local(true, pending)}, want: "Ann@Example.com", bind: 7},
		{name: "local pending link of another issuer", in: in,
			f: SSOFacts{Local: local(true, &SSOLink{LocalUserID: 7, Issuer: "https://other/"})}, refused: true},
		{name: "local pending link, subject equal to the address", in: SSOSignIn{Issuer: iss, Subject: "ann@example.com"},
			f: SSOFacts{Local: local(true, pending)}, refused: true},
		{name: "local linked to another subject", in: in,
			f: SSOFacts{Local: local(true, &SSOLink{LocalUserID: 7, Issuer: iss, Subject: "s9"})}, refused: true, changed: true},
		{name: "linked by subject", in: unverified, f: SSOFacts{Linked: local(true, &SSOLink{Issuer: iss, Subject: "s1"})}, want: "Ann@Example.com"},
		{name: "linked by subject, deactivated", in: in, f: SSOFacts{Linked: local(false, &SSOLink{Issuer: iss, Subject: "s1"})}, refused: true},
		{name: "bound through a link to an account deleted since", in: in,
			f: SSOFacts{Bound: &SSOUser{UserID: "Ann@Example.com", Issuer: iss, Subject: "s1", Bound: true, Linked: true}}, refused: true},
		{name: "bound to a local account's address, unlinked since", in: in,
			f: SSOFacts{Bound: bound, Holder: bound, Local: local(true, nil)}, refused: true},
	} {
		res, err := ResolveSSOSignIn(c.in, c.f)
		var r *SSORefusal
		switch {
		case c.refused:
			if !errors.As(err, &r) || r.SubjectChanged != c.changed || ErrorCode(err) != EFORBIDDEN || r.UserID == "" || r.Reason == "" {
				t.Errorf("%s: want a refusal (subject changed %v), got %+v %v", c.name, c.changed, res, err)
			}
		case err != nil || res.UserID != c.want || res.BindLink != c.bind || res.Linked != (c.want == "Ann@Example.com"):
			t.Errorf("%s: got %+v %v, want %s (bind %d)", c.name, res, err, c.want, c.bind)
		}
	}
}
