// Package onedrive is the ONEDRIVE destination: a client of Microsoft
// Graph's drive API (the signed-in user's OneDrive, /me/drive) that signs
// in with the integration's refresh token, client id and client secret at
// the Microsoft identity platform of its tenant, and stores each document
// in the configured folder with conflictBehavior "replace" (delivering it
// again replaces it). Documents up to one chunk go in one PUT; larger ones
// through an upload session (createUploadSession, then ranged PUTs), one
// chunk in memory at a time. ListFolders is the cloud folder browser's
// OneDrive side.
package onedrive

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"

	"docflow"
)

// Defaults of Options.
const (
	DefaultAPIURL   = "https://graph.microsoft.com/v1.0"
	DefaultLoginURL = "https://login.microsoftonline.com"
	// FragmentUnit is the unit of an upload session's ranges: every
	// fragment but the last is a multiple of 320 KiB.
	FragmentUnit = 320 << 10
	// DefaultChunkSize (5 MiB, 16 units, within Graph's recommended 5 to
	// 10 MiB) is one fragment of an upload session, and the largest
	// document sent in a single PUT.
	DefaultChunkSize = 16 * FragmentUnit
	// MaxChunkSize is Graph's limit of one fragment (60 MiB).
	MaxChunkSize = 192 * FragmentUnit
)

const service = "OneDrive"

// Config is one ONEDRIVE integration (decisions.md, Integrations).
type Config struct {
	// Folder is "" for the drive's root, else "/name[/name…]".
	Folder string
	// Tenant is the directory the app signs in at: common (default),
	// organizations, consumers, or a tenant id or domain.
	Tenant                               string
	RefreshToken, ClientID, ClientSecret string
}

var tenantRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,253}$`)

// ParseConfig reads an ONEDRIVE integration's config and credentials.
func ParseConfig(in *docflow.Integration) (Config, error) {
	p, _ := in.Config["path"].(string)
	tenant, _ := in.Config["tenant"].(string)
	c := Config{
		Folder:       Folder(p),
		Tenant:       strings.TrimSpace(tenant),
		RefreshToken: in.Credentials["refresh_token"],
		ClientID:     in.Credentials["client_id"],
		ClientSecret: in.Credentials["client_secret"],
	}
	if c.Tenant == "" {
		c.Tenant = "common"
	}
	if !tenantRE.MatchString(c.Tenant) {
		return c, fmt.Errorf("onedrive: tenant %q is not a tenant name, id or domain", c.Tenant)
	}
	if c.RefreshToken == "" || c.ClientID == "" || c.ClientSecret == "" {
		return c, errors.New("onedrive: refresh_token, client_id and client_secret are required")
	}
	return c, nil
}

// Folder is a configured path as it is kept here: "" for the root, else
// "/a/b" (no trailing slash, no dot segments).
func Folder(p string) string {
	p = path.Clean("/" + strings.TrimSpace(p))
	if p == "/" {
		return ""
	}
	return p
}

// itemPath addresses a drive item by its path: "root" for the root, else
// "root:/a/b:" with each segment escaped.
func itemPath(p string) string {
	if p == "" || p == "/" {
		return "root"
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return "root:/" + strings.Join(segs, "/") + ":"
}

// Options are what the process gives every OneDrive client.
type Options struct {
	// HTTP makes every request (the guarded client; required).
	HTTP *http.Client
	// APIURL is ONEDRIVE_API_URL (Graph with its version); LoginURL is
	// ONEDRIVE_LOGIN_URL, the identity platform whose
	// /<tenant>/oauth2/v2.0/token issues tokens.
	APIURL, LoginURL string
	// ChunkSize is one upload-session fragment: a multiple of 320 KiB,
	// default DefaultChunkSize, at most MaxChunkSize.
	ChunkSize int
	// OnRefreshToken receives the refresh token Microsoft issued in place
	// of the configured one (it rotates them), so the caller may keep it.
	OnRefreshToken func(string)
}

func (o Options) withDefaults() (Options, error) {
	if o.HTTP == nil {
		return o, errors.New("onedrive: Options.HTTP is required")
	}
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.LoginURL == "" {
		o.LoginURL = DefaultLoginURL
	}
	for _, u := range []*string{&o.APIURL, &o.LoginURL} {
		*u = strings.TrimRight(*u, "/")
		if p, err := url.Parse(*u); err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
			return o, fmt.Errorf("onedrive: %q is not an http(s) URL", *u)
		}
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	o.ChunkSize = min(max(o.ChunkSize/FragmentUnit, 1)*FragmentUnit, MaxChunkSize)
	return o, nil
}
