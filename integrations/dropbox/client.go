package dropbox

import (
	"context"
	"errors"
	"fmt"
	"io"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// Client delivers documents to one DROPBOX integration. It implements
// docflow.DestinationClient; its integration's actor owns it.
type Client struct {
	cfg    Config
	o      Options
	tokens *httpdest.Tokens
	api    api
	buf    []byte
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
	_ docflow.DestinationNamer    = (*Client)(nil)
)

// Location implements docflow.DestinationLocation.
func (c *Client) Location() string {
	if c.cfg.Folder == "" {
		return "Dropbox folder /"
	}
	return "Dropbox folder " + c.cfg.Folder
}

// DestinationName implements docflow.DestinationNamer: the characters
// Dropbox (and the Windows computers it syncs to) refuse become "_".
func (c *Client) DestinationName(name string) string { return httpdest.SafeName(name) }

// New returns the client of cfg. It connects nowhere yet.
func New(cfg Config, o Options) (*Client, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	tokens := httpdest.NewTokens(httpdest.TokenOptions{
		Service: service, TokenURL: o.APIURL + "/oauth2/token",
		ClientID: cfg.AppKey, ClientSecret: cfg.AppSecret, RefreshToken: cfg.RefreshToken, HTTP: o.HTTP,
		OnRotate: o.OnRefreshToken,
	})
	return &Client{cfg: cfg, o: o, tokens: tokens, api: api{o: o, auth: tokens}}, nil
}

// Connect gets an access token with the refresh token, which checks the
// app key, app secret and refresh token.
func (c *Client) Connect(ctx context.Context) error {
	_, err := c.tokens.Token(ctx)
	return err
}

// Close releases the chunk buffer and idle connections.
func (c *Client) Close(context.Context) error {
	c.buf = nil
	c.o.HTTP.CloseIdleConnections()
	return nil
}

// fileMetadata is the part of Dropbox's FileMetadata read here.
type fileMetadata struct {
	Name        string `json:"name"`
	ID          string `json:"id"`
	PathLower   string `json:"path_lower"`
	PathDisplay string `json:"path_display"`
	Size        int64  `json:"size"`
}

type commitInfo struct {
	Path       string `json:"path"`
	Mode       string `json:"mode"`
	Autorename bool   `json:"autorename"`
	Mute       bool   `json:"mute"`
}

type cursor struct {
	SessionID string `json:"session_id"`
	Offset    int64  `json:"offset"`
}

// Deliver stores body as doc.Name (made safe for Dropbox) in the folder,
// replacing what is there. It returns the file's path as Dropbox shows it.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	commit := commitInfo{Path: c.cfg.Folder + "/" + httpdest.SafeName(doc.Name), Mode: "overwrite", Mute: true}
	if c.buf == nil {
		c.buf = make([]byte, c.o.ChunkSize)
	}
	buf := c.buf
	n, last, err := httpdest.ReadChunk(ctx, body, buf)
	if err != nil {
		return "", fmt.Errorf("read document: %w", err)
	}
	var meta fileMetadata
	if last {
		if err := checkSize(doc, int64(n)); err != nil {
			return "", err
		}
		err = c.api.content(ctx, "files/upload", commit, buf[:n], &meta)
		return meta.PathDisplay, err
	}
	var start struct {
		SessionID string `json:"session_id"`
	}
	if err := c.api.content(ctx, "files/upload_session/start", map[string]bool{"close": false}, buf[:n], &start); err != nil {
		return "", err
	}
	cur := cursor{SessionID: start.SessionID, Offset: int64(n)}
	for {
		n, last, err = httpdest.ReadChunk(ctx, body, buf)
		if err != nil {
			return "", fmt.Errorf("read document: %w", err)
		}
		if last {
			break
		}
		if err := c.appendChunk(ctx, &cur, buf[:n]); err != nil {
			return "", err
		}
	}
	if err := checkSize(doc, cur.Offset+int64(n)); err != nil {
		return "", err
	}
	finish := struct {
		Cursor cursor     `json:"cursor"`
		Commit commitInfo `json:"commit"`
	}{cur, commit}
	err = c.api.content(ctx, "files/upload_session/finish", finish, buf[:n], &meta)
	return meta.PathDisplay, err
}

// appendChunk sends one chunk of a session. A chunk Dropbox says it
// already holds (incorrect_offset at the chunk's end: an earlier attempt
// landed after all) counts as sent.
func (c *Client) appendChunk(ctx context.Context, cur *cursor, chunk []byte) error {
	arg := struct {
		Cursor cursor `json:"cursor"`
		Close  bool   `json:"close"`
	}{Cursor: *cur}
	err := c.api.content(ctx, "files/upload_session/append_v2", arg, chunk, nil)
	var f *failure
	if errors.As(err, &f) && f.correctOffset != nil && *f.correctOffset == cur.Offset+int64(len(chunk)) {
		err = nil
	}
	if err != nil {
		return err
	}
	cur.Offset += int64(len(chunk))
	return nil
}

// checkSize refuses to commit a body that is not doc.Size bytes long: a
// short read must not replace a stored document with a truncated one.
func checkSize(doc docflow.DestinationDoc, got int64) error {
	if doc.Size >= 0 && got != doc.Size {
		return fmt.Errorf("document body is %d bytes, expected %d", got, doc.Size)
	}
	return nil
}

// Probe writes a small probe file in the folder and deletes it.
func (c *Client) Probe(ctx context.Context) error {
	probe := c.cfg.Folder + "/" + httpdest.ProbeName()
	var meta fileMetadata
	if err := c.api.content(ctx, "files/upload", commitInfo{Path: probe, Mode: "add", Mute: true}, []byte(httpdest.ProbeBody), &meta); err != nil {
		return err
	}
	if err := c.api.rpc(ctx, "files/delete_v2", map[string]string{"path": probe}, nil); err != nil {
		var de *docflow.DestinationError
		if errors.As(err, &de) {
			de.Reason = "the probe file was written but could not be removed: " + de.Reason
		}
		return err
	}
	return nil
}

// Open returns the client of a stored integration: ParseConfig, then New.
func Open(in *docflow.Integration, o Options) (*Client, error) {
	cfg, err := ParseConfig(in)
	if err != nil {
		return nil, err
	}
	return New(cfg, o)
}
