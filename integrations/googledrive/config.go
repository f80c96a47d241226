// Package googledrive is the GOOGLE_DRIVE destination: a client of the
// Google Drive API (v3) that signs in with the integration's refresh
// token, client id and client secret, and stores each document in the
// configured folder (folder_id, "root" by default). Drive keys files by
// id, not name, so delivering a document again finds the file of that
// name in the folder and uploads a new version of it; there is never a
// second file. Documents up to one chunk go in one request (multipart to
// create, media to update); larger ones through a resumable upload, one
// chunk in memory at a time. ListFolders is the cloud folder browser's
// Google Drive side.
package googledrive

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"docflow"
)

// Defaults of Options.
const (
	DefaultAPIURL   = "https://www.googleapis.com"
	DefaultTokenURL = "https://oauth2.googleapis.com/token"
	// ChunkUnit is the unit of a resumable upload's chunks: every chunk
	// but the last is a multiple of 256 KiB.
	ChunkUnit = 256 << 10
	// DefaultChunkSize is one chunk of a resumable upload, and the largest
	// document sent in a single request.
	DefaultChunkSize = 16 * ChunkUnit
	// MaxChunkSize bounds the chunk held in memory.
	MaxChunkSize = 256 * ChunkUnit
)

const service = "Google Drive"

// FolderMIME is the MIME type of Drive folders.
const FolderMIME = "application/vnd.google-apps.folder"

// Config is one GOOGLE_DRIVE integration (decisions.md, Integrations).
type Config struct {
	// FolderID is the id of the folder documents go to ("root": My Drive).
	FolderID                             string
	RefreshToken, ClientID, ClientSecret string
}

// ParseConfig reads a GOOGLE_DRIVE integration's config and credentials.
func ParseConfig(in *docflow.Integration) (Config, error) {
	id, _ := in.Config["folder_id"].(string)
	c := Config{
		FolderID:     strings.TrimSpace(id),
		RefreshToken: in.Credentials["refresh_token"],
		ClientID:     in.Credentials["client_id"],
		ClientSecret: in.Credentials["client_secret"],
	}
	if c.FolderID == "" {
		c.FolderID = "root"
	}
	if c.RefreshToken == "" || c.ClientID == "" || c.ClientSecret == "" {
		return c, errors.New("googledrive: refresh_token, client_id and client_secret are required")
	}
	return c, nil
}

// Options are what the process gives every Google Drive client.
type Options struct {
	// HTTP makes every request (the guarded client; required).
	HTTP *http.Client
	// APIURL is GOOGLE_DRIVE_API_URL (the host of /drive/v3 and
	// /upload/drive/v3); TokenURL is GOOGLE_OAUTH_TOKEN_URL.
	APIURL, TokenURL string
	// ChunkSize is one chunk of a resumable upload: a multiple of
	// 256 KiB, default DefaultChunkSize, at most MaxChunkSize.
	ChunkSize int
	// OnRefreshToken receives a refresh token Google issued in place of
	// the configured one, so the caller may keep it.
	OnRefreshToken func(string)
}

func (o Options) withDefaults() (Options, error) {
	if o.HTTP == nil {
		return o, errors.New("googledrive: Options.HTTP is required")
	}
	if o.APIURL == "" {
		o.APIURL = DefaultAPIURL
	}
	if o.TokenURL == "" {
		o.TokenURL = DefaultTokenURL
	}
	o.APIURL = strings.TrimRight(o.APIURL, "/")
	for _, u := range []string{o.APIURL, o.TokenURL} {
		if p, err := url.Parse(u); err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http") {
			return o, fmt.Errorf("googledrive: %q is not an http(s) URL", u)
		}
	}
	if o.ChunkSize <= 0 {
		o.ChunkSize = DefaultChunkSize
	}
	o.ChunkSize = min(max(o.ChunkSize/ChunkUnit, 1)*ChunkUnit, MaxChunkSize)
	return o, nil
}

// quote makes s a string literal of Drive's query language.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
