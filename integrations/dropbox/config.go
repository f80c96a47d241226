// Package dropbox is the DROPBOX destination: a client of Dropbox's HTTP
// API (v2) that signs in with the integration's refresh token, app key and
// app secret, and stores each document in the configured folder with
// mode "overwrite" (delivering it again replaces it). Documents up to one
// chunk go in one /files/upload request; larger ones through an upload
// session (start, append_v2, finish), one chunk in memory at a time.
// ListFolders is the cloud folder browser's Dropbox side.
package dropbox

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"

	"docflow"
)

// Defaults of Options.
const (
	DefaultAPIURL     = "https://api.dropboxapi.com"
	DefaultContentURL = "https://content.dropboxapi.com"
	// DefaultChunkSize is the size of one upload-session request (a
	// multiple of 4 MiB, as Dropbox advises), and the largest document
	// sent in a single request.
	DefaultChunkSize = 4 << 20
	// MaxChunkSize is Dropbox's limit of one upload request.
	MaxChunkSize = 150 << 20
)

const service = "Dropbox"

// Config is one DROPBOX integration (decisions.md, Integrations).
type Config struct {
	// Folder is the folder documents go to: "" for the root, else
	// "/name[/name…]".
	Folder                          string
	RefreshToken, AppKey, AppSecret string
}

// ParseConfig reads a DROPBOX integration's config and credentials.
func ParseConfig(in *docflow.Integration) (Config, error) {
	p, _ := in.Config["path"].(string)
	c := Config{
		Folder:       Folder(p),
		RefreshToken: in.Credentials["refresh_token"],
		AppKey:       in.Credentials["app_key"],
		AppSecret:    in.Credentials["app_secret"],
	}
	if c.RefreshToken == "" || c.AppKey == "" || c.AppSecret == "" {
		return c, errors.New("dropbox: refresh_token, app_key and app_secret are required")
	}
	return c, nil
}

// Folder is a configured path as Dropbox names folders: "" for the root,
// else "/a/b" (no trailing slash, no dot segments).
func Folder(p string) string {
	p = strings.TrimSpace(p)
	if p == "" || p == "/" {
		return ""
	}
	p = path.Clean("/" + p)
	if p == "/" {
		return ""
	}
	return p
}

// Options are what the process gives every Dropbox client.
type Options struct {
	// HTTP makes every request (the guarded client; required).
	HTTP *http.Client
	// APIURL is DROPBOX_API_URL (RPC calls and the token endpoint
	// APIURL/oauth2/token); ContentURL is DROPBOX_CONTENT_URL (uploads).
	APIURL, ContentURL string
	// ChunkSize is the size of one upload-session request (default
	// DefaultChunkSize, at most MaxChunkSize).
	ChunkSize int
	// OnRefreshToken receives a refresh token Dropbox issued in place of
	// the configured one, so the caller may keep it.
	OnRefreshToken func(string)
}

func (o Options) withDefaults() (Options, error) {
	if o.HTTP == nil {
		return o, errors.New("dropbox: Options.HTTP is required")
	}
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.ContentURL == "" {
		o.ContentURL = DefaultContentURL
	}
	for _, u := range []*string{&o.APIURL, &o.ContentURL} {
		*u = strings.TrimRight(*u, "/")
		if p, err := url.Parse(*u); err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
			return o, fmt.Errorf("dropbox: %q is not an http(s) URL", *u)
		}
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	o.ChunkSize = min(o.ChunkSize, MaxChunkSize)
	return o, nil
}
