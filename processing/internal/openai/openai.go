// Package openai is the client side that the OpenAI-compatible providers
// (chat metadata extraction, embeddings) share: endpoint defaults, bearer
// authentication and a JSON POST retried per attempt.
package openai

import (
	"context"
	"net/http"
	"time"

	"docflow/internal/netguard"
	"docflow/processing/internal/httpx"
)

// DefaultBaseURL is the API root used when a provider names none.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config is the connection part of a provider's configuration.
type Config struct {
	BaseURL  string // default DefaultBaseURL
	Timeout  time.Duration
	Attempts int // default 3
	Backoff  time.Duration
	// HTTPClient makes the requests (default a netguard client: the
	// endpoint is the operator's, so a private address is allowed, with
	// the environment's proxy).
	HTTPClient *http.Client
}

// Client posts JSON requests to one OpenAI-compatible API.
type Client struct {
	baseURL string
	http    *http.Client
	retry   httpx.Retry
}

// New returns a Client; a zero Timeout or Backoff in cfg takes the
// provider's default passed here.
func New(cfg Config, timeout, backoff time.Duration) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = timeout
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = backoff
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true},
			Proxy: true, Redirects: 10})
	}
	return &Client{baseURL: cfg.BaseURL, http: cfg.HTTPClient,
		retry: httpx.Retry{Attempts: cfg.Attempts, Timeout: cfg.Timeout, Backoff: cfg.Backoff}}
}

// URL is path below the API root.
func (c *Client) URL(path string) string { return httpx.JoinURL(c.baseURL, path) }

// Header holds extra (copied) and, when apiKey is set, the bearer
// Authorization header.
func Header(apiKey string, extra http.Header) http.Header {
	h := http.Header{}
	for k, v := range extra {
		h[k] = v
	}
	if apiKey != "" {
		h.Set("Authorization", "Bearer "+apiKey)
	}
	return h
}

// Post sends body as JSON to url until a reply is accepted: each 2xx reply
// is decoded into a new R and handed to accept, whose error is retried like
// a failed request unless it is httpx.Permanent. It returns the last error
// of httpx.Retry.Do, without the URL.
func Post[R any](ctx context.Context, c *Client, url string, header http.Header, body any, accept func(*R) error) error {
	return c.retry.Do(ctx, func(ctx context.Context) error {
		var resp R
		if err := httpx.PostJSON(ctx, c.http, url, header, body, &resp); err != nil {
			return err
		}
		return accept(&resp)
	})
}
