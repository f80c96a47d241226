package netguard

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// What is wrong with a URL CheckURL refused: the Kind of its URLError.
var (
	ErrSyntax      = errors.New("not a URL")
	ErrNotAbsolute = errors.New("not an absolute http or https URL")
	ErrScheme      = errors.New("only http and https URLs are supported")
	ErrNoHost      = errors.New("no host name")
	ErrUserInfo    = errors.New("URLs with credentials are not supported")
	ErrPort        = errors.New("invalid port")
	// ErrPrivate (a host on an internal address) is the last kind.
)

// URLError is a URL CheckURL refused. errors.Is matches it with its Kind.
type URLError struct {
	// Kind is what is wrong: ErrSyntax, ErrNotAbsolute, ErrScheme,
	// ErrNoHost, ErrUserInfo, ErrPort or ErrPrivate.
	Kind error
	// URL is the URL as parsed (nil for ErrSyntax).
	URL *url.URL
	// Err is url.Parse's reason for ErrSyntax ("invalid character " " in
	// host name"), else nil.
	Err error
}

func (e *URLError) Error() string {
	if e.Err != nil {
		return e.Kind.Error() + ": " + e.Err.Error()
	}
	return e.Kind.Error()
}

func (e *URLError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

// URLRules are what CheckURL holds a URL to.
type URLRules struct {
	// Allowed is the allow-list whose entries admit a host although it is
	// internal (HostAllowed).
	Allowed []string
	// Resolve looks a host name up now and refuses it when an answer is
	// internal: for a URL kept for later (a webhook's), so the user hears
	// of it at once. A name that does not resolve now is accepted; its
	// connections are checked when they are made. Without Resolve only
	// addresses and localhost names are judged here and the Dialer checks
	// the rest: for a URL fetched at once, whose name is then looked up
	// only once.
	Resolve bool
	// Resolver looks names up (default net.DefaultResolver).
	Resolver Resolver
	// LookupTimeout bounds the lookup (default 3 s).
	LookupTimeout time.Duration
}

// CheckURL checks a URL a user gave before it is kept or fetched: an
// absolute http or https URL with a host, without user info, with a port
// in 1–65535, whose host (on the URL's port, 80 or 443 without one) the
// allow-list admits or is neither an internal address (in any spelling a
// resolver takes, such as 2130706433 or 0x7f.1), nor localhost or a name
// under .localhost, nor, with Resolve, a name answered with an internal
// address. Surrounding spaces are ignored. A refusal is a *URLError
// naming what is wrong. The connections made to the URL later go through
// a Dialer all the same: a URL that passed may still be refused then.
func CheckURL(ctx context.Context, raw string, r URLRules) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, &URLError{Kind: ErrSyntax, Err: err}
	}
	refuse := func(kind error) (*url.URL, error) { return nil, &URLError{Kind: kind, URL: u} }
	switch {
	case u.Scheme == "":
		return refuse(ErrNotAbsolute)
	case u.Scheme != "http" && u.Scheme != "https": // url.Parse lowers the scheme
		return refuse(ErrScheme)
	case u.Host == "" || u.Hostname() == "":
		return refuse(ErrNoHost)
	case u.User != nil:
		return refuse(ErrUserInfo)
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if u.Port() != "" {
		p, err := strconv.Atoi(u.Port())
		if err != nil || p < 1 || p > 65535 {
			return refuse(ErrPort)
		}
		port = p
	}
	host := u.Hostname()
	if HostAllowed(r.Allowed, host, port) {
		return u, nil
	}
	if ip, ok := parseLooseIP(host); ok {
		if !public(ip) {
			return refuse(ErrPrivate)
		}
		return u, nil
	}
	if name := strings.ToLower(strings.TrimSuffix(host, ".")); name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return refuse(ErrPrivate)
	}
	if !r.Resolve {
		return u, nil
	}
	timeout := r.LookupTimeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	lctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := Dialer{Resolver: r.Resolver}.resolve(lctx, host)
	if err != nil {
		return u, nil // not resolvable now: each connection is checked when it is made
	}
	for _, ip := range addrs {
		if !public(ip) {
			return refuse(ErrPrivate)
		}
	}
	return u, nil
}
