package googledrive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// Client delivers documents to one GOOGLE_DRIVE integration. It
// implements docflow.DestinationClient; its integration's actor owns it.
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
)

// Location implements docflow.DestinationLocation.
func (c *Client) Location() string {
	if c.cfg.FolderID == "root" {
		return "Google Drive folder My Drive"
	}
	return "Google Drive folder " + c.cfg.FolderID
}

// New returns the client of cfg. It connects nowhere yet.
func New(cfg Config, o Options) (*Client, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.FolderID == "" {
		cfg.FolderID = "root"
	}
	tokens := httpdest.NewTokens(httpdest.TokenOptions{
		Service: service, TokenURL: o.TokenURL,
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RefreshToken: cfg.RefreshToken, HTTP: o.HTTP,
		OnRotate: o.OnRefreshToken,
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

type driveFile struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// common query parameters: shared drives are served like My Drive.
func query(extra url.Values) string {
	q := url.Values{"supportsAllDrives": {"true"}, "fields": {"id,name"}}
	for k, v := range extra {
		q[k] = v
	}
	return q.Encode()
}

// find returns the id of the oldest file called name in the folder, "" if
// there is none.
func (c *Client) find(ctx context.Context, name string) (string, error) {
	q := url.Values{
		"q":                         {fmt.Sprintf("name = %s and %s in parents and trashed = false", quote(name), quote(c.cfg.FolderID))},
		"fields":                    {"files(id,name)"},
		"orderBy":                   {"createdTime"},
		"pageSize":                  {"10"},
		"includeItemsFromAllDrives": {"true"},
	}
	var out struct {
		Files []driveFile `json:"files"`
	}
	if _, err := c.api.call(ctx, http.MethodGet, c.o.APIURL+"/drive/v3/files?"+query(q), nil, nil, &out); err != nil {
		return "", err
	}
	if len(out.Files) == 0 {
		return "", nil
	}
	return out.Files[0].ID, nil
}

// Deliver stores body as doc.Name in the folder: a new version of the
// file of that name if there is one, else a new file. It returns the
// file's id.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	// Drive takes any name; CheckDestinationName keeps it one path element.
	name := doc.Name
	mimeType := doc.MimeType
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	id, err := c.find(ctx, name)
	if err != nil {
		return "", err
	}
	if c.buf == nil {
		c.buf = make([]byte, c.o.ChunkSize)
	}
	n, last, err := httpdest.ReadChunk(ctx, body, c.buf)
	if err != nil {
		return "", fmt.Errorf("read document: %w", err)
	}
	if !last && doc.Size == int64(n) {
		if last, err = httpdest.Ends(ctx, body); err != nil {
			return "", fmt.Errorf("read document: %w", err)
		}
	}
	if last {
		if err := checkSize(doc, int64(n)); err != nil {
			return "", err
		}
		return c.uploadSmall(ctx, id, name, mimeType, c.buf[:n])
	}
	if doc.Size <= int64(n) {
		return "", checkSize(doc, int64(n)+1)
	}
	return c.resumable(ctx, id, name, mimeType, doc.Size, body, n)
}

// uploadSmall sends data in one request: multipart (metadata and bytes)
// to create, media to update.
func (c *Client) uploadSmall(ctx context.Context, id, name, mimeType string, data []byte) (string, error) {
	var f driveFile
	if id != "" {
		h := http.Header{"Content-Type": {mimeType}}
		_, err := c.api.call(ctx, http.MethodPatch, c.o.APIURL+"/upload/drive/v3/files/"+url.PathEscape(id)+"?"+query(url.Values{"uploadType": {"media"}}),
			h, func() io.Reader { return bytes.NewReader(data) }, &f)
		return f.ID, err
	}
	meta, _ := json.Marshal(map[string]any{"name": name, "parents": []string{c.cfg.FolderID}})
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	pw, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"application/json; charset=UTF-8"}})
	pw.Write(meta) //nolint:errcheck // a bytes.Buffer does not fail
	pw, _ = mw.CreatePart(textproto.MIMEHeader{"Content-Type": {mimeType}})
	pw.Write(data) //nolint:errcheck
	mw.Close()     //nolint:errcheck
	body := b.Bytes()
	h := http.Header{"Content-Type": {"multipart/related; boundary=" + mw.Boundary()}}
	_, err := c.api.call(ctx, http.MethodPost, c.o.APIURL+"/upload/drive/v3/files?"+query(url.Values{"uploadType": {"multipart"}}),
		h, func() io.Reader { return bytes.NewReader(body) }, &f)
	return f.ID, err
}

// resumable uploads a document of total bytes through a resumable upload
// session; the first n bytes are in c.buf.
func (c *Client) resumable(ctx context.Context, id, name, mimeType string, total int64, body io.Reader, n int) (string, error) {
	method, target, meta := http.MethodPost, c.o.APIURL+"/upload/drive/v3/files", map[string]any{"name": name, "parents": []string{c.cfg.FolderID}}
	if id != "" {
		method, target, meta = http.MethodPatch, target+"/"+url.PathEscape(id), map[string]any{}
	}
	mb, _ := json.Marshal(meta)
	h := http.Header{"Content-Type": {"application/json; charset=UTF-8"}, "X-Upload-Content-Type": {mimeType},
		"X-Upload-Content-Length": {strconv.FormatInt(total, 10)}}
	rh, err := c.api.call(ctx, method, target+"?"+query(url.Values{"uploadType": {"resumable"}}), h, func() io.Reader { return bytes.NewReader(mb) }, nil)
	if err != nil {
		return "", err
	}
	session := rh.Get("Location")
	if u, err := url.Parse(session); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", docflow.DestFail(docflow.DestUnavailable, service+": unexpected answer", fmt.Errorf("upload session %q", session))
	}
	var offset int64
	for {
		end := offset + int64(n)
		if end > total {
			return "", checkSize(docflow.DestinationDoc{Size: total}, end)
		}
		f, err := c.putChunk(ctx, session, c.buf[:n], offset, total)
		if err != nil {
			return "", err
		}
		if end == total {
			if f.ID == "" {
				return "", docflow.DestFail(docflow.DestUnavailable, service+": unexpected answer", errors.New("no file id after the last chunk"))
			}
			return f.ID, nil
		}
		offset = end
		var last bool
		if n, last, err = httpdest.ReadChunk(ctx, body, c.buf); err != nil {
			return "", fmt.Errorf("read document: %w", err)
		}
		if last && offset+int64(n) < total {
			return "", checkSize(docflow.DestinationDoc{Size: total}, offset+int64(n))
		}
	}
}

// putChunk sends chunk as bytes start… of the session. A 308 says how
// much Drive holds (Range: bytes=0-N); where it took only part of the
// chunk, the rest is sent again. The last chunk's answer is the file.
func (c *Client) putChunk(ctx context.Context, session string, chunk []byte, start, total int64) (driveFile, error) {
	ctx, cancel := context.WithTimeout(ctx, httpdest.RequestTimeout)
	defer cancel()
	var f driveFile
	sent := 0
	for range 3 {
		part := chunk[sent:]
		from := start + int64(sent)
		resp, err := c.tokens.Do(ctx, func(ctx context.Context, token string) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPut, session, bytes.NewReader(part))
			if err != nil {
				return nil, err
			}
			req.ContentLength = int64(len(part))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, from+int64(len(part))-1, total))
			return req, nil
		})
		if err != nil {
			return f, err
		}
		switch resp.StatusCode {
		case http.StatusOK, http.StatusCreated:
			b, err := httpdest.ReadBody(resp, httpdest.MaxJSONBody)
			if err != nil {
				return f, httpdest.Transport(service, err)
			}
			_ = json.Unmarshal(b, &f)
			return f, nil
		case http.StatusPermanentRedirect:
		case http.StatusNotFound, http.StatusGone:
			// The session expired: a new attempt starts anew.
			e := answerError(resp)
			var fl *failure
			if errors.As(e, &fl) {
				fl.Class = docflow.DestUnavailable
			}
			return f, e
		default:
			return f, answerError(resp)
		}
		httpdest.Drain(resp)
		want := start + int64(len(chunk))
		held := int64(0) // bytes Drive holds
		if r := resp.Header.Get("Range"); r != "" {
			_, last, _ := strings.Cut(strings.TrimPrefix(r, "bytes="), "-")
			if v, err := strconv.ParseInt(last, 10, 64); err == nil {
				held = v + 1
			}
		}
		switch {
		case held == want:
			return f, nil
		case held >= start && held < want:
			sent = int(held - start)
		default:
			return f, docflow.DestFail(docflow.DestUnavailable, service+": upload session out of step",
				fmt.Errorf("session holds %d bytes, chunk ends at %d", held, want))
		}
	}
	return f, docflow.DestFail(docflow.DestUnavailable, service+": upload session out of step", errors.New("chunk not taken"))
}

// checkSize refuses to commit a body that is not doc.Size bytes long.
func checkSize(doc docflow.DestinationDoc, got int64) error {
	if doc.Size >= 0 && got != doc.Size {
		return fmt.Errorf("document body is %d bytes, expected %d", got, doc.Size)
	}
	return nil
}

// Probe creates a small probe file in the folder and deletes it for good
// (Drive's delete skips the trash).
func (c *Client) Probe(ctx context.Context) error {
	id, err := c.uploadSmall(ctx, "", httpdest.ProbeName(), "text/plain", []byte(httpdest.ProbeBody))
	if err != nil {
		return err
	}
	_, err = c.api.call(ctx, http.MethodDelete, c.o.APIURL+"/drive/v3/files/"+url.PathEscape(id)+"?supportsAllDrives=true", nil, nil, nil)
	if err != nil {
		var de *docflow.DestinationError
		if errors.As(err, &de) {
			de.Reason = "the probe file was written but could not be removed: " + de.Reason
		}
	}
	return err
}

// Open returns the client of a stored integration: ParseConfig, then New.
func Open(in *docflow.Integration, o Options) (*Client, error) {
	cfg, err := ParseConfig(in)
	if err != nil {
		return nil, err
	}
	return New(cfg, o)
}
