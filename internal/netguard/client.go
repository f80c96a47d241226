package netguard

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// ClientOptions shape an HTTP client whose every connection goes through
// a Dialer.
type ClientOptions struct {
	// Dialer makes every connection (its rules, allow-list and timeout).
	Dialer Dialer
	// Redirects is how many redirect hops are followed, each to an http or
	// https URL and each connection checked again by the Dialer; 0 follows
	// none (a 3xx is the answer).
	Redirects int
	// MaxIdleConnsPerHost keeps connections to one host for reuse
	// (default 16).
	MaxIdleConnsPerHost int
	// TLS configures TLS (nil: the system's roots).
	TLS *tls.Config
	// Timeout bounds a whole request, body included (0: the request's
	// context alone bounds it).
	Timeout time.Duration
	// Proxy sends requests through the proxy of the environment
	// (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), as the operator's network may
	// require. It applies only with Dialer.AllowPrivate, to endpoints the
	// operator configured: through a proxy the address rule would judge
	// the proxy, not the host a user named.
	Proxy bool
}

// ErrTooManyRedirects is a redirect beyond ClientOptions.Redirects.
var ErrTooManyRedirects = errors.New("too many redirects")

// ErrBadRedirect is a redirect to a URL that is not http or https.
var ErrBadRedirect = errors.New("redirect to a non-http(s) URL")

// Client returns an HTTP client that connects only through o.Dialer,
// with the redirect policy of o.Redirects and no proxy (but see
// ClientOptions.Proxy). It is the one way docflow's code makes HTTP
// requests to the outside.
func Client(o ClientOptions) *http.Client {
	idle := o.MaxIdleConnsPerHost
	if idle <= 0 {
		idle = 16
	}
	var proxy func(*http.Request) (*url.URL, error)
	if o.Proxy && o.Dialer.AllowPrivate {
		proxy = http.ProxyFromEnvironment
	}
	tr := &http.Transport{
		Proxy:                 proxy,
		DialContext:           o.Dialer.DialContext,
		TLSClientConfig:       o.TLS,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4 * idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: redirectPolicy(o.Redirects)}
}

func redirectPolicy(max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if max <= 0 {
			return http.ErrUseLastResponse
		}
		if len(via) > max {
			return fmt.Errorf("%w (%d)", ErrTooManyRedirects, max)
		}
		if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
			return ErrBadRedirect
		}
		return nil
	}
}
