package netguard

import (
	"context"
	"errors"
	"net"
	"testing"
)

// fixedResolver answers from a table; names it lacks do not resolve.
type fixedResolver map[string][]string

func (r fixedResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, ip := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(ip)})
	}
	return out, nil
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	res := fixedResolver{"public.test": {"93.184.215.14"}, "intranet.test": {"10.1.2.3"},
		"mixed.test": {"93.184.215.14", "127.0.0.1"}}
	rules := URLRules{Resolve: true, Resolver: res, Allowed: []string{"10.0.0.9:8443", "intranet.test", "localhost:8080"}}
	for _, tc := range []struct {
		raw  string
		kind error // nil: accepted
	}{
		{"https://public.test/hook", nil},
		{"  http://public.test:8080/x?y=1  ", nil},
		{"https://93.184.215.14/h", nil},
		{"https://unresolvable.test/h", nil},
		{"https://intranet.test/h", nil},
		{"https://10.0.0.9:8443/h", nil},
		{"http://localhost:8080/h", nil},
		{"HTTPS://public.test/", nil},
		{"http://exa mple.com/", ErrSyntax},
		{"http://[::1/", ErrSyntax},
		{"not a url", ErrNotAbsolute},
		{"//public.test/x", ErrNotAbsolute},
		{"ftp://public.test/x", ErrScheme},
		{"javascript:alert(1)", ErrScheme},
		{"file:///etc/passwd", ErrScheme},
		{"http://", ErrNoHost},
		{"http://:80/", ErrNoHost},
		{"https://user:pw@public.test/", ErrUserInfo},
		{"https://user@public.test/", ErrUserInfo},
		{"https://public.test:0/", ErrPort},
		{"https://public.test:70000/", ErrPort},
		{"https://10.0.0.9/h", ErrPrivate},
		{"https://10.0.0.9:8444/h", ErrPrivate},
		{"http://localhost/h", ErrPrivate},
		{"http://LOCALHOST./h", ErrPrivate},
		{"http://api.localhost/h", ErrPrivate},
		{"http://169.254.169.254/latest", ErrPrivate},
		{"http://192.168.1.10/h", ErrPrivate},
		{"http://[::1]/h", ErrPrivate},
		{"http://[::ffff:127.0.0.1]/h", ErrPrivate},
		{"http://[fe80::1%25eth0]/h", ErrPrivate},
		{"http://2130706433/h", ErrPrivate},
		{"http://0x7f.1/h", ErrPrivate},
		{"http://0177.0.0.1/h", ErrPrivate},
		{"http://0/h", ErrPrivate},
		{"http://mixed.test/h", ErrPrivate},
	} {
		u, err := CheckURL(ctx, tc.raw, rules)
		var ue *URLError
		switch {
		case tc.kind == nil && err != nil:
			t.Errorf("%q refused: %v", tc.raw, err)
		case tc.kind == nil && (u == nil || u.Host == ""):
			t.Errorf("%q: accepted as %v", tc.raw, u)
		case tc.kind != nil && (!errors.Is(err, tc.kind) || !errors.As(err, &ue) || ue.Kind != tc.kind || u != nil):
			t.Errorf("%q: %v, %v; want %v", tc.raw, u, err, tc.kind)
		}
	}

	// Without Resolve a name is left to the Dialer, and nothing is looked
	// up; addresses and localhost names are still judged.
	lookups := countingResolver{fixedResolver: res}
	offline := URLRules{Resolver: &lookups}
	if _, err := CheckURL(ctx, "http://intranet.test/h", offline); err != nil || lookups.n != 0 {
		t.Errorf("without Resolve: %v, %d lookups", err, lookups.n)
	}
	for _, raw := range []string{"http://127.0.0.1/", "http://localhost/"} {
		if _, err := CheckURL(ctx, raw, offline); !errors.Is(err, ErrPrivate) {
			t.Errorf("without Resolve %q: %v", raw, err)
		}
	}
	var ue *URLError
	if _, err := CheckURL(ctx, "http://exa mple.com/", offline); !errors.As(err, &ue) || ue.Err == nil || ue.URL != nil {
		t.Errorf("syntax error without its reason: %#v", err)
	}
	if _, err := CheckURL(ctx, "ftp://x/", offline); !errors.As(err, &ue) || ue.URL == nil || ue.URL.Scheme != "ftp" {
		t.Errorf("scheme error without the URL: %#v", err)
	}
}

type countingResolver struct {
	fixedResolver
	n int
}

func (r *countingResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.n++
	return r.fixedResolver.LookupIPAddr(ctx, host)
}
