// Package paperless is the PAPERLESS destination: a client of a
// Paperless-ngx server's REST API with token authentication. A document
// is posted to /api/documents/post_document/ (multipart, streamed) with
// its title, date, correspondent and tags; Paperless takes correspondents
// and tags by id, so they are looked up by name and created when missing.
// Paperless consumes the upload in the background: the client follows the
// consumption task for a while to learn the new document's id, or that
// Paperless already holds the same bytes (its duplicate check by
// checksum), which counts as delivered.
package paperless

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"docflow"
	"docflow/internal/netguard"
)

// Defaults of Options.
const (
	// DefaultTaskWait is how long Deliver follows a consumption task that
	// has not started (Paperless's queue is busy) before it takes the
	// queued upload as delivered.
	DefaultTaskWait = 10 * time.Second
	// DefaultPollInterval is the pause between two looks at the task.
	DefaultPollInterval = time.Second
	// DefaultTimeout bounds each request but the upload.
	DefaultTimeout = 60 * time.Second
	// maxTags bounds the tags given to one document.
	maxTags = 50
)

const service = "Paperless"

// Config is one PAPERLESS integration (decisions.md, Integrations).
type Config struct {
	// URL is the server's root (the API is URL/api/).
	URL           string
	CACertificate string
	Token         string
}

// ParseConfig reads a PAPERLESS integration's config and credentials.
func ParseConfig(in *docflow.Integration) (Config, error) {
	u, _ := in.Config["url"].(string)
	ca, _ := in.Config["ca_certificate"].(string)
	c := Config{URL: strings.TrimSpace(u), CACertificate: strings.TrimSpace(ca), Token: in.Credentials["token"]}
	if c.Token == "" {
		return c, errors.New("paperless: token is required")
	}
	_, err := c.base()
	return c, err
}

// base is the API's root URL, ending in "/api/".
func (c Config) base() (string, error) {
	p, err := url.Parse(c.URL)
	if err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") || p.User != nil {
		return "", fmt.Errorf("paperless: url %q is not an http(s) URL of a server", c.URL)
	}
	p.RawQuery, p.Fragment = "", ""
	return strings.TrimRight(p.String(), "/") + "/api/", nil
}

// Options are what the process gives every Paperless client.
type Options struct {
	// Dialer makes every connection: the integrations' dialer, which
	// refuses private addresses unless INTEGRATION_ALLOWED_HOSTS names
	// the host.
	Dialer netguard.Dialer
	// TaskWait is how long Deliver follows the consumption task (default
	// DefaultTaskWait; negative: not at all).
	TaskWait time.Duration
	// PollInterval is the pause between two looks at the task.
	PollInterval time.Duration
	// Timeout bounds each request but the upload, which its context
	// bounds (default DefaultTimeout).
	Timeout time.Duration
}

// httpClient is the guarded client of cfg: the configured CA, when given,
// is the only one trusted.
func (o Options) httpClient(cfg Config) (*http.Client, error) {
	var tc *tls.Config
	if cfg.CACertificate != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cfg.CACertificate)) {
			return nil, errors.New("paperless: ca_certificate holds no certificate")
		}
		tc = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return netguard.Client(netguard.ClientOptions{Dialer: o.Dialer, TLS: tc, MaxIdleConnsPerHost: 2}), nil
}
