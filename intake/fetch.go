package intake

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"docflow"
	"docflow/internal/netguard"
)

// maxRedirects is the number of redirect hops process-url follows.
const maxRedirects = 5

// newFetchClient builds the process-url client (netguard.Client): no
// proxy from the environment; every connection, redirects' included,
// resolves its host once and is refused when an answer is internal,
// unless URL_FETCH_ALLOWED_HOSTS admits the host on that port (host, or
// host:port); at most maxRedirects hops, each to http or https.
func newFetchClient(s *Service) *http.Client {
	return netguard.Client(netguard.ClientOptions{Redirects: maxRedirects, Dialer: netguard.Dialer{
		Timeout: 10 * time.Second, Resolver: s.cfg.Resolver,
		Allowed: func() []string { return docflow.URLFetchAllowedHosts.Get(s.cfg.Settings) }}})
}

// parseFetchURL checks a URL to fetch (netguard.CheckURL): an absolute
// http(s) URL with a host, without credentials, not an internal address
// written in it (its name is checked when the connection is made) unless
// URL_FETCH_ALLOWED_HOSTS admits it; anything else is EBADREQUEST naming
// the problem (the browser extension shows it).
func parseFetchURL(ctx context.Context, raw string, allowed []string) (*url.URL, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, docflow.Errorf(docflow.EINVALID, "url is required")
	}
	u, err := netguard.CheckURL(ctx, raw, netguard.URLRules{Allowed: allowed})
	var bad *netguard.URLError
	if err == nil || !errors.As(err, &bad) {
		return u, err
	}
	switch bad.Kind {
	case netguard.ErrSyntax:
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Invalid URL: %v", bad.Err)
	case netguard.ErrScheme:
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Unsupported URL scheme %q: only http and https URLs are supported", bad.URL.Scheme)
	case netguard.ErrUserInfo:
		return nil, docflow.Errorf(docflow.EBADREQUEST, "URLs with credentials are not supported")
	case netguard.ErrPrivate:
		return nil, docflow.Errorf(docflow.EBADREQUEST, "Access to private or internal addresses is not allowed")
	}
	return nil, docflow.Errorf(docflow.EBADREQUEST, "Invalid URL: %v", bad.Kind)
}

// FetchURL downloads rawURL and ingests it.
func (s *Service) FetchURL(ctx context.Context, user *docflow.User, rawURL, filename string, claim *docflow.IdempotencyClaim) (*docflow.IntakeResult, error) {
	u, err := parseFetchURL(ctx, rawURL, docflow.URLFetchAllowedHosts.Get(s.cfg.Settings))
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
		Idempotency: claim,
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

// fetchError maps a failed request to the API's statuses.
func fetchError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, netguard.ErrPrivate):
		return docflow.Errorf(docflow.EBADREQUEST, "Access to private or internal addresses is not allowed")
	case errors.Is(err, netguard.ErrTooManyRedirects):
		return docflow.Errorf(docflow.EBADREQUEST, "Too many redirects (at most %d)", maxRedirects)
	case errors.Is(err, netguard.ErrBadRedirect):
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
