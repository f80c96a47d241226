package intake

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"code.dny.dev/ssrf"

	"docflow"
)

// maxRedirects is the number of redirect hops process-url follows.
const maxRedirects = 5

// errPrivate marks a refused destination; it travels through net/http
// wrapped in *url.Error and is recognised with errors.Is.
var errPrivate = errors.New("private or internal address")

var errTooManyRedirects = errors.New("too many redirects")

var errBadRedirect = errors.New("redirect to a non-http(s) URL")

// newFetchClient builds the process-url client: no proxy from the
// environment, every connection dialled through safeDial, every redirect
// hop checked.
func newFetchClient(s *Service) *http.Client {
	guard := ssrf.New(ssrf.WithAnyPort())
	d := &net.Dialer{Timeout: 10 * time.Second, Control: guard.Safe}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return s.safeDial(ctx, d, guard, network, addr)
		},
		ForceAttemptHTTP2:     false,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // the request context carries the total timeout
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return errTooManyRedirects
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return errBadRedirect
			}
			return nil
		},
	}
}

// allowedHost reports whether URL_FETCH_ALLOWED_HOSTS names host.
func (s *Service) allowedHost(host string) bool {
	for _, h := range docflow.URLFetchAllowedHosts.Get(s.cfg.Settings) {
		if strings.EqualFold(strings.Trim(h, "[]"), host) {
			return true
		}
	}
	return false
}

// safeDial resolves the host once, refuses it when any answer is not a
// public address, and connects to exactly the address it checked, so a
// second DNS answer can never change the destination (no rebinding
// window). The dialer's Control hook checks the socket address again.
// Hosts named in URL_FETCH_ALLOWED_HOSTS skip the address checks.
func (s *Service) safeDial(ctx context.Context, d *net.Dialer, guard *ssrf.Guardian, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if s.allowedHost(host) {
		plain := &net.Dialer{Timeout: d.Timeout}
		return plain.DialContext(ctx, network, addr)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("port %q: %w", portStr, errPrivate)
	}
	var addrs []netip.Addr
	if ip, ok := parseLooseIP(host); ok {
		addrs = []netip.Addr{ip}
	} else {
		answers, err := s.cfg.Resolver.LookupIPAddr(ctx, host)
		if err != nil {
			return nil, err
		}
		for _, a := range answers {
			if ip, ok := netip.AddrFromSlice(a.IP); ok {
				addrs = append(addrs, ip)
			}
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("no address for %s", host)
		}
	}
	for _, ip := range addrs {
		if err := guard.SafeAddr(ip); err != nil {
			return nil, fmt.Errorf("%s: %w", ip, errPrivate)
		}
	}
	var last error
	for _, ip := range addrs {
		conn, err := d.DialContext(ctx, network, netip.AddrPortFrom(ip.Unmap(), uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if errors.Is(err, ssrf.ErrProhibitedIP) {
			return nil, fmt.Errorf("%s: %w", ip, errPrivate)
		}
		last = err
	}
	return nil, last
}

// parseLooseIP parses every spelling of an address a resolver might accept:
// standard IPv4 and IPv6, and the inet_aton forms (decimal "2130706433",
// hex "0x7f000001", octal "0177.0.0.1", short "127.1"), so that none of
// them reaches DNS and slips past the checks.
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
		if p == "" {
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
	var n uint64
	switch len(vals) {
	case 1:
		n = vals[0]
	case 2:
		n = vals[0]<<24 | vals[1]
	case 3:
		n = vals[0]<<24 | vals[1]<<16 | vals[2]
	case 4:
		n = vals[0]<<24 | vals[1]<<16 | vals[2]<<8 | vals[3]
	}
	for _, v := range vals[:len(vals)-1] {
		if v > 255 {
			return netip.Addr{}, false
		}
	}
	if n > 0xFFFFFFFF {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}), true
}

// parseFetchURL accepts absolute http(s) URLs with a host and without
// credentials; anything else is EBADREQUEST naming the problem.
func parseFetchURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "url is required")
	}
	// The spec answers an unusable URL with 400 and a detail that says what
	// is wrong (the browser extension shows it).
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Invalid URL: %v", err)
	}
	if u.Scheme == "" {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Invalid URL: not an absolute http or https URL")
	}
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Unsupported URL scheme %q: only http and https URLs are supported", u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Invalid URL: no host name")
	}
	if u.User != nil {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "URLs with credentials are not supported")
	}
	return u, nil
}

// FetchURL downloads rawURL and ingests it.
func (s *Service) FetchURL(ctx context.Context, user *docflow.User, rawURL, filename string) (*docflow.IntakeResult, error) {
	u, err := parseFetchURL(rawURL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, docflow.Positive(docflow.URLFetchTimeout, s.cfg.Settings))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Invalid URL")
	}
	req.Header.Set("User-Agent", "docflow")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fetchError(ctx, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Nothing found at the URL (remote answered %d)", resp.StatusCode)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, docflow.Errorf(docflow.EBADGATEWAY, "The remote server answered %d", resp.StatusCode)
	}
	if max := s.maxUpload(); resp.ContentLength > max {
		return nil, tooLarge(resp.ContentLength, max)
	}
	name := fetchFilename(filename, resp)
	res, err := s.Ingest(ctx, docflow.Upload{
		Filename: name, Body: resp.Body, Size: resp.ContentLength, User: user, Channel: docflow.ChannelURL,
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, docflow.Errorf(docflow.ETIMEOUT, "Timed out fetching the URL")
		}
		if docflow.ErrorCode(err) == docflow.EBADREQUEST && strings.HasPrefix(docflow.ErrorMessage(err), "Upload incomplete") {
			return nil, docflow.Errorf(docflow.EBADGATEWAY, "The connection to the URL broke off")
		}
		return nil, err
	}
	return res, nil
}

// fetchError maps a failed request to the spec's statuses.
func fetchError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, errPrivate):
		return docflow.Errorf(docflow.EBADREQUEST, "Access to private or internal addresses is not allowed")
	case errors.Is(err, errTooManyRedirects):
		return docflow.Errorf(docflow.EBADREQUEST, "Too many redirects (at most %d)", maxRedirects)
	case errors.Is(err, errBadRedirect):
		return docflow.Errorf(docflow.EBADREQUEST, "Redirect to a URL that is not http or https")
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return docflow.Errorf(docflow.ETIMEOUT, "Timed out fetching the URL")
	}
	return docflow.Errorf(docflow.EBADGATEWAY, "Could not connect to the URL")
}

// fetchFilename picks the name: the client's, else Content-Disposition's,
// else the last path segment; an extension is added from Content-Type when
// the name has none.
func fetchFilename(given string, resp *http.Response) string {
	name := strings.TrimSpace(given)
	if name == "" {
		if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
			name = params["filename"]
		}
	}
	if name == "" {
		name = path.Base(resp.Request.URL.Path)
		if name == "/" || name == "." {
			name = ""
		}
		if un, err := url.PathUnescape(name); err == nil {
			name = un
		}
	}
	if name == "" {
		name = "download"
	}
	if Extension(name) == "" {
		if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err == nil {
			if ext := extensionFor(mt); ext != "" {
				return name + "." + ext
			}
		}
	}
	return name
}

// extensionFor returns the preferred extension of a supported MIME type.
func extensionFor(mimeType string) string {
	best := ""
	for ext, m := range docflow.SupportedFileTypes() {
		// Prefer the common spelling (jpg over jpeg, tiff over tif).
		if m == mimeType && (best == "" || len(ext) < len(best) && ext != "tif" || best == "tif") {
			best = ext
		}
	}
	return best
}
