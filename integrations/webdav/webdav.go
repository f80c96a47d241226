// Package webdav is the WEBDAV and NEXTCLOUD destination: documents are
// PUT into a folder of a WebDAV server with github.com/studio-b12/gowebdav.
// A Nextcloud destination is WebDAV at Nextcloud's layout: the files of
// user u live under {url}/remote.php/dav/files/{u}/, authenticated with an
// app password.
//
// Every connection goes through internal/netguard's dialer (the
// integration allow-list); config.ca_certificate replaces the system's
// roots for a server with a private CA. Credentials go with every request
// (Basic authentication, preemptively): a streamed upload cannot be sent
// again after a 401 challenge without holding it in memory.
package webdav

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"sync/atomic"

	"github.com/studio-b12/gowebdav"

	"docflow"
	"docflow/internal/netguard"
)

// Config is a WebDAV destination's configuration.
type Config struct {
	// Root is the URL of the WebDAV collection Folder is in (for
	// Nextcloud, {url}/remote.php/dav/files/{username}).
	Root *url.URL
	// Folder is the folder under Root documents go to ("/" = Root).
	Folder   string
	Username string
	Password string
	// CACertificate, when set, is the only CA trusted (PEM).
	CACertificate string
	// Kind names the server in messages ("WebDAV", "Nextcloud").
	Kind string
}

// ParseConfig reads a WEBDAV or NEXTCLOUD integration's configuration.
func ParseConfig(in *docflow.Integration) (Config, error) {
	str := func(k string) string { s, _ := in.Config[k].(string); return strings.TrimSpace(s) }
	raw := str("url")
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, errors.New("config.url must be an http or https URL")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Config{}, errors.New("config.url must not carry a query, a fragment or credentials")
	}
	cfg := Config{Folder: str("path"), Username: in.Credentials["username"], Password: in.Credentials["password"],
		CACertificate: str("ca_certificate"), Kind: "WebDAV"}
	if cfg.Folder == "" {
		cfg.Folder = "/"
	}
	if strings.Contains(cfg.Folder, "\x00") {
		return Config{}, errors.New("config.path holds a NUL character")
	}
	for _, seg := range strings.Split(cfg.Folder, "/") {
		if seg == ".." {
			return Config{}, errors.New(`config.path must not contain ".."`)
		}
	}
	root := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}
	if in.IntegrationType == docflow.IntegrationNextcloud {
		if cfg.Username == "" || cfg.Password == "" {
			return Config{}, errors.New("credentials.username and credentials.password (an app password) are required")
		}
		cfg.Kind = "Nextcloud"
		root.Path += "/remote.php/dav/files/" + cfg.Username
	}
	cfg.Root = root
	return cfg, nil
}

// Client is the docflow.DestinationClient of a WebDAV folder. Calls must
// not overlap (the integration's actor owns it).
type Client struct {
	cfg    Config
	folder string // Folder, cleaned, with a leading and no trailing "/"
	// base is rooted at Root (folders), dav at the folder itself, so a
	// delivery is one PUT (gowebdav creates the parent of a path below the
	// root first).
	base, dav *gowebdav.Client
	tr        *ctxTransport
	ready     bool // the folder was seen or made
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// New returns a client of cfg that connects through dialer.
func New(cfg Config, dialer netguard.Dialer) (*Client, error) {
	tlsCfg, err := docflow.IntegrationTLS(map[string]any{"ca_certificate": cfg.CACertificate}, "")
	if err != nil {
		return nil, err
	}
	hc := netguard.Client(netguard.ClientOptions{Dialer: dialer, TLS: tlsCfg, MaxIdleConnsPerHost: 4})
	tr := &ctxTransport{base: hc.Transport}
	folder := path.Clean("/" + cfg.Folder)
	var auth gowebdav.Authorizer = gowebdav.NewPreemptiveAuth(noAuth{})
	if cfg.Username != "" || cfg.Password != "" {
		auth = gowebdav.NewPreemptiveAuth(basicAuth{user: cfg.Username, pass: cfg.Password})
	}
	c := &Client{cfg: cfg, folder: folder, tr: tr}
	// gowebdav escapes each segment of the URLs it builds: it is given
	// the root unescaped.
	root := cfg.Root.Scheme + "://" + cfg.Root.Host + strings.TrimSuffix(cfg.Root.Path, "/")
	c.base = gowebdav.NewAuthClient(root+"/", auth)
	c.dav = gowebdav.NewAuthClient(root+folder, auth)
	for _, d := range []*gowebdav.Client{c.base, c.dav} {
		d.SetTransport(tr)
	}
	return c, nil
}

// NewIntegration returns the client of a WEBDAV or NEXTCLOUD integration:
// the docflow.DestinationFactory internal/app registers.
func NewIntegration(in *docflow.Integration, dialer netguard.Dialer) (docflow.DestinationClient, error) {
	cfg, err := ParseConfig(in)
	if err != nil {
		return nil, err
	}
	return New(cfg, dialer)
}

// Location implements docflow.DestinationLocation: the folder's URL.
func (c *Client) Location() string {
	u := *c.cfg.Root
	u.Path = strings.TrimSuffix(u.Path, "/") + c.folder
	return c.cfg.Kind + " folder " + u.Redacted()
}

// Connect implements docflow.DestinationClient: it looks the folder up
// (which checks the credentials) and creates it when missing.
func (c *Client) Connect(ctx context.Context) error {
	c.ready = false
	return c.ensureFolder(ctx)
}

func (c *Client) ensureFolder(ctx context.Context) error {
	c.tr.set(ctx)
	fi, err := c.base.Stat(c.folder)
	switch {
	case err == nil && !fi.IsDir():
		return docflow.DestFail(docflow.DestInvalid, fmt.Sprintf("%s is a file, not a folder", c.folder), nil)
	case err == nil:
		c.ready = true
		return nil
	case !gowebdav.IsErrNotFound(err):
		return c.failure("look up the folder", err)
	}
	if err := c.base.MkdirAll(c.folder, 0o755); err != nil {
		return c.failure("create the folder", err)
	}
	c.ready = true
	return nil
}

// Close implements docflow.DestinationClient: idle connections are closed.
func (c *Client) Close(context.Context) error {
	c.tr.closeIdle()
	return nil
}

// Deliver implements docflow.DestinationClient: one PUT of body to the
// folder under doc.Name, which replaces what was there. A folder removed
// since Connect is made again, and the upload sent again when body can be
// rewound (a file); else the delivery fails as unavailable and its retry
// finds the folder.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	if !c.ready {
		if err := c.ensureFolder(ctx); err != nil {
			return "", err
		}
	}
	if err := c.put(ctx, "/"+doc.Name, body, doc.Size, "upload"); err != nil {
		return "", err
	}
	return path.Join(c.folder, doc.Name), nil
}

// put PUTs body as name in the folder (see Deliver).
func (c *Client) put(ctx context.Context, name string, body io.Reader, size int64, what string) error {
	c.tr.set(ctx)
	err := c.dav.WriteStreamWithLength(name, body, size, 0o644)
	if isStatus(err, 404, 409) {
		c.ready = false
		if ferr := c.ensureFolder(ctx); ferr != nil {
			return ferr
		}
		s, ok := body.(io.Seeker)
		if !ok {
			return docflow.DestFail(docflow.DestUnavailable, "the folder was missing and has been created again", err)
		}
		if _, serr := s.Seek(0, io.SeekStart); serr != nil {
			return docflow.DestFail(docflow.DestUnavailable, "the folder was missing and has been created again", serr)
		}
		c.tr.set(ctx)
		err = c.dav.WriteStreamWithLength(name, body, size, 0o644)
		if isStatus(err, 404, 409) {
			// NOTE: x/net/webdav (rclone's server, among others) answers
			// 404 to a file it may not create; the folder is there.
			return docflow.DestFail(docflow.DestForbidden,
				c.cfg.Kind+" refused to create the file in an existing folder (404)", err)
		}
	}
	if err != nil {
		return c.failure(what, err)
	}
	return nil
}

// Probe implements docflow.DestinationClient: the folder is looked up or
// made, and a small file written and removed.
func (c *Client) Probe(ctx context.Context) error {
	if err := c.ensureFolder(ctx); err != nil {
		return err
	}
	name := fmt.Sprintf("/.docflow-test-%d", os.Getpid())
	probe := []byte("docflow test\n")
	if err := c.put(ctx, name, bytes.NewReader(probe), int64(len(probe)), "write a test file"); err != nil {
		return err
	}
	c.tr.set(ctx)
	if err := c.dav.Remove(name); err != nil && !gowebdav.IsErrNotFound(err) {
		return c.failure("remove the test file", err)
	}
	return nil
}

// failure classes a gowebdav error: an HTTP status by
// docflow.DestFailHTTP, a failed connection by netguard.DestFailure.
func (c *Client) failure(what string, err error) error {
	var se gowebdav.StatusError
	var pe *os.PathError
	if errors.As(err, &pe) && errors.As(pe.Err, &se) {
		reason := fmt.Sprintf("%s answered %d %s to %s", c.cfg.Kind, se.Status, http.StatusText(se.Status), what)
		if se.Status >= 300 && se.Status < 400 {
			// A redirect of an upload cannot be followed with its body.
			return docflow.DestFail(docflow.DestInvalid, reason+": set config.url to the address the server redirects to", err)
		}
		return docflow.DestFailHTTP(se.Status, reason, 0, err)
	}
	f := netguard.DestFailure(err)
	var de *docflow.DestinationError
	if errors.As(f, &de) && de.Reason != "" {
		de.Reason = fmt.Sprintf("could not %s: %s", what, de.Reason)
	}
	return f
}

func isStatus(err error, codes ...int) bool {
	for _, code := range codes {
		if gowebdav.IsErrCode(err, code) {
			return true
		}
	}
	return false
}

// ctxTransport makes every request of the current call carry its
// context: gowebdav builds its requests without one. Calls never overlap,
// so one context at a time is enough.
type ctxTransport struct {
	base http.RoundTripper
	ctx  atomic.Pointer[context.Context]
}

func (t *ctxTransport) set(ctx context.Context) { t.ctx.Store(&ctx) }

func (t *ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if p := t.ctx.Load(); p != nil {
		r = r.WithContext(*p)
	}
	return t.base.RoundTrip(r)
}

func (t *ctxTransport) closeIdle() {
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// basicAuth sends the credentials with every request; a 401 is the
// credentials refused.
type basicAuth struct{ user, pass string }

func (b basicAuth) Authorize(_ *http.Client, rq *http.Request, _ string) error {
	rq.SetBasicAuth(b.user, b.pass)
	return nil
}

func (b basicAuth) Verify(_ *http.Client, rs *http.Response, p string) (bool, error) {
	if rs.StatusCode == http.StatusUnauthorized {
		return false, gowebdav.NewPathError("Authorize", p, rs.StatusCode)
	}
	return false, nil
}

func (b basicAuth) Close() error                                   { return nil }
func (b basicAuth) Clone() gowebdav.Authenticator                  { return b }
func (b basicAuth) String() string                                 { return "basic" }
func (noAuth) Authorize(*http.Client, *http.Request, string) error { return nil }
func (noAuth) Verify(_ *http.Client, rs *http.Response, p string) (bool, error) {
	if rs.StatusCode == http.StatusUnauthorized {
		return false, gowebdav.NewPathError("Authorize", p, rs.StatusCode)
	}
	return false, nil
}
func (noAuth) Close() error                    { return nil }
func (n noAuth) Clone() gowebdav.Authenticator { return n }
func (noAuth) String() string                  { return "none" }

// noAuth sends no credentials.
type noAuth struct{}
