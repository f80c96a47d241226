package onedrive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// Client delivers documents to one ONEDRIVE integration. It implements
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
	folder := c.cfg.Folder
	if folder == "" {
		folder = "/"
	}
	return "OneDrive folder " + folder
}

// DestinationName implements docflow.DestinationNamer: the characters
// OneDrive refuses become "_".
func (c *Client) DestinationName(name string) string { return httpdest.SafeName(name) }

// New returns the client of cfg. It connects nowhere yet.
func New(cfg Config, o Options) (*Client, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.Tenant == "" {
		cfg.Tenant = "common"
	}
	if !tenantRE.MatchString(cfg.Tenant) {
		return nil, fmt.Errorf("onedrive: tenant %q is not a tenant name, id or domain", cfg.Tenant)
	}
	tokens := httpdest.NewTokens(httpdest.TokenOptions{
		Service: service, TokenURL: o.LoginURL + "/" + cfg.Tenant + "/oauth2/v2.0/token",
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RefreshToken: cfg.RefreshToken,
		HTTP: o.HTTP, OnRotate: o.OnRefreshToken,
	})
	return &Client{cfg: cfg, o: o, tokens: tokens, api: api{o: o, auth: tokens}}, nil
}

// Connect gets an access token with the refresh token, which checks the
// client id, client secret and refresh token.
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

type driveItem struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// contentURL is the simple upload of the item at p, replacing what is
// there.
func (c *Client) contentURL(p string) string {
	return c.o.APIURL + "/me/drive/" + itemPath(p) + "/content?@microsoft.graph.conflictBehavior=replace"
}

// Deliver stores body as doc.Name (made safe for OneDrive) in the folder,
// replacing what is there, and returns its path in the drive.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	target := c.cfg.Folder + "/" + httpdest.SafeName(doc.Name)
	if c.buf == nil {
		c.buf = make([]byte, c.o.ChunkSize)
	}
	n, last, err := httpdest.ReadChunk(ctx, body, c.buf)
	if err != nil {
		return "", fmt.Errorf("read document: %w", err)
	}
	if !last && doc.Size == int64(n) {
		// A body of exactly one chunk: it must end here.
		if last, err = httpdest.Ends(ctx, body); err != nil {
			return "", fmt.Errorf("read document: %w", err)
		}
	}
	if last {
		if err := checkSize(doc, int64(n)); err != nil {
			return "", err
		}
		var item driveItem
		return target, c.api.call(ctx, http.MethodPut, c.contentURL(target), "application/octet-stream", c.buf[:n], &item)
	}
	if doc.Size <= int64(n) {
		return "", checkSize(doc, int64(n)+1)
	}
	return target, c.session(ctx, target, doc.Size, body, n)
}

// session uploads a document of total bytes through an upload session;
// the first n bytes are in c.buf. A session that fails is cancelled.
func (c *Client) session(ctx context.Context, target string, total int64, body io.Reader, n int) (err error) {
	var sess struct {
		UploadURL string `json:"uploadUrl"`
	}
	arg, _ := json.Marshal(map[string]any{"item": map[string]string{"@microsoft.graph.conflictBehavior": "replace"}})
	create := c.o.APIURL + "/me/drive/" + itemPath(target) + "/createUploadSession"
	if err := c.api.call(ctx, http.MethodPost, create, "application/json", arg, &sess); err != nil {
		return err
	}
	if u, perr := url.Parse(sess.UploadURL); perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return docflow.DestFail(docflow.DestUnavailable, service+": unexpected answer", fmt.Errorf("upload URL %q", sess.UploadURL))
	}
	defer func() {
		if err != nil {
			c.cancel(ctx, sess.UploadURL)
		}
	}()
	var offset int64
	for {
		end := offset + int64(n)
		if end > total {
			return checkSize(docflow.DestinationDoc{Size: total}, end)
		}
		if err := c.putFragment(ctx, sess.UploadURL, c.buf[:n], offset, total); err != nil {
			return err
		}
		if end == total {
			return nil
		}
		offset = end
		var last bool
		if n, last, err = httpdest.ReadChunk(ctx, body, c.buf); err != nil {
			return fmt.Errorf("read document: %w", err)
		}
		if last && offset+int64(n) < total {
			return checkSize(docflow.DestinationDoc{Size: total}, offset+int64(n))
		}
	}
}

// putFragment sends chunk as bytes start… of the session. The upload URL
// carries its own authorization, so no token is sent. Where the session
// says it took only part of the chunk (nextExpectedRanges), the rest is
// sent again.
func (c *Client) putFragment(ctx context.Context, uploadURL string, chunk []byte, start, total int64) error {
	ctx, cancel := context.WithTimeout(ctx, httpdest.RequestTimeout)
	defer cancel()
	sent := 0
	for range 3 {
		part := chunk[sent:]
		from := start + int64(sent)
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, uploadURL, bytes.NewReader(part))
		if err != nil {
			return err
		}
		req.ContentLength = int64(len(part))
		req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, from+int64(len(part))-1, total))
		resp, err := c.o.HTTP.Do(req)
		if err != nil {
			return httpdest.Transport(service, err)
		}
		switch resp.StatusCode {
		case http.StatusOK, http.StatusCreated:
			httpdest.Drain(resp)
			return nil
		case http.StatusAccepted:
		case http.StatusNotFound, http.StatusRequestedRangeNotSatisfiable, http.StatusConflict:
			// The session expired or lost step: a new attempt starts anew.
			e := answerError(resp)
			var f *failure
			if errors.As(e, &f) {
				f.Class = docflow.DestUnavailable
			}
			return e
		default:
			return answerError(resp)
		}
		var st struct {
			Next []string `json:"nextExpectedRanges"`
		}
		b, err := httpdest.ReadBody(resp, httpdest.MaxJSONBody)
		if err != nil {
			return httpdest.Transport(service, err)
		}
		_ = json.Unmarshal(b, &st)
		want := start + int64(len(chunk))
		next := want
		if len(st.Next) > 0 {
			first, _, _ := strings.Cut(st.Next[0], "-")
			if v, err := strconv.ParseInt(first, 10, 64); err == nil {
				next = v
			}
		}
		switch {
		case next == want:
			return nil
		case next > start+int64(sent) && next < want:
			sent = int(next - start)
		default:
			return docflow.DestFail(docflow.DestUnavailable, service+": upload session out of step",
				fmt.Errorf("session expects byte %d, fragment ends at %d", next, want))
		}
	}
	return docflow.DestFail(docflow.DestUnavailable, service+": upload session out of step", errors.New("fragment not taken"))
}

// cancel deletes an unfinished upload session (its fragments are
// dropped); failing that, the session expires by itself.
func (c *Client) cancel(ctx context.Context, uploadURL string) {
	ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, uploadURL, nil)
	if err != nil {
		return
	}
	if resp, err := c.o.HTTP.Do(req); err == nil {
		httpdest.Drain(resp)
	}
}

// checkSize refuses to commit a body that is not doc.Size bytes long.
func checkSize(doc docflow.DestinationDoc, got int64) error {
	if doc.Size >= 0 && got != doc.Size {
		return fmt.Errorf("document body is %d bytes, expected %d", got, doc.Size)
	}
	return nil
}

// Probe writes a small probe file in the folder and deletes it. Deleted
// items go to the OneDrive recycle bin, where the probe file stays until
// the bin is emptied.
func (c *Client) Probe(ctx context.Context) error {
	var item driveItem
	target := c.cfg.Folder + "/" + httpdest.ProbeName()
	if err := c.api.call(ctx, http.MethodPut, c.contentURL(target), "text/plain", []byte(httpdest.ProbeBody), &item); err != nil {
		return err
	}
	if err := c.api.call(ctx, http.MethodDelete, c.o.APIURL+"/me/drive/items/"+url.PathEscape(item.ID), "", nil, nil); err != nil {
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
