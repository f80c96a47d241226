package paperless

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// Client delivers documents to one PAPERLESS integration. It implements
// docflow.DestinationClient; its integration's actor owns it.
type Client struct {
	cfg  Config
	o    Options
	base string
	http *http.Client
	// ids caches the ids of tags and correspondents by kind and name
	// (lower case) for the client's life.
	ids map[string]int64
}

var (
	_ docflow.DestinationClient   = (*Client)(nil)
	_ docflow.DestinationLocation = (*Client)(nil)
)

// Location implements docflow.DestinationLocation: the server's address.
func (c *Client) Location() string { return "Paperless-ngx " + strings.TrimSuffix(c.base, "api/") }

// ProbeWords implements docflow.DestinationProbeWords: the probe checks the
// token's right to add documents and writes nothing.
func (c *Client) ProbeWords() string { return "the token may add documents" }

// New returns the client of cfg. It connects nowhere yet.
func New(cfg Config, o Options) (*Client, error) {
	base, err := cfg.base()
	if err != nil {
		return nil, err
	}
	if o.TaskWait == 0 {
		o.TaskWait = DefaultTaskWait
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	hc, err := o.httpClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{cfg: cfg, o: o, base: base, http: hc, ids: map[string]int64{}}, nil
}

// Connect does nothing: each call authenticates with the token.
func (c *Client) Connect(context.Context) error { return nil }

// Close drops idle connections and the cached ids.
func (c *Client) Close(context.Context) error {
	c.http.CloseIdleConnections()
	c.ids = map[string]int64{}
	return nil
}

// documentURL is where Paperless's web interface shows document id.
func (c *Client) documentURL(id int64) string {
	return strings.TrimSuffix(c.base, "api/") + "documents/" + strconv.FormatInt(id, 10) + "/details"
}

// Deliver posts body to Paperless as doc.Name with the document's title,
// date, correspondent and tags, and follows the consumption task up to
// Options.TaskWait. It returns the document's address in Paperless's web
// interface; "task <id>" while Paperless is still consuming it.
//
// Paperless refuses a file whose checksum it already holds: delivering
// the same bytes again yields the document stored the first time, not a
// second one. Paperless cannot replace a document's file through its
// API, so a document delivered again with other bytes (reprocessed) is
// added as another document.
func (c *Client) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	if err := docflow.CheckDestinationName(doc.Name); err != nil {
		return "", docflow.DestFail(docflow.DestInvalid, err.Error(), err)
	}
	var fields [][2]string
	if t := strings.TrimSpace(doc.Title); t != "" {
		fields = append(fields, [2]string{"title", truncate(t, 128)})
	}
	if _, err := time.Parse(time.DateOnly, doc.Date); err == nil {
		fields = append(fields, [2]string{"created", doc.Date})
	}
	if name := strings.TrimSpace(doc.Correspondent); name != "" {
		id, err := c.objectID(ctx, "correspondents", name)
		if err != nil {
			return "", err
		}
		if id > 0 {
			fields = append(fields, [2]string{"correspondent", strconv.FormatInt(id, 10)})
		}
	}
	seen := map[string]bool{}
	for _, tag := range doc.Tags {
		tag = strings.TrimSpace(tag)
		if tag == "" || seen[strings.ToLower(tag)] || len(seen) >= maxTags {
			continue
		}
		seen[strings.ToLower(tag)] = true
		id, err := c.objectID(ctx, "tags", tag)
		if err != nil {
			return "", err
		}
		if id > 0 {
			fields = append(fields, [2]string{"tags", strconv.FormatInt(id, 10)})
		}
	}
	task, err := c.post(ctx, doc, fields, body)
	if err != nil {
		return "", err
	}
	return c.follow(ctx, task)
}

// post streams the multipart upload; its length is known beforehand, so
// the body goes out with a Content-Length and is never held in memory.
func (c *Client) post(ctx context.Context, doc docflow.DestinationDoc, fields [][2]string, body io.Reader) (string, error) {
	var head bytes.Buffer
	mw := multipart.NewWriter(&head)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return "", err
		}
	}
	mimeType := doc.MimeType
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="document"; filename=%q`, httpdest.SafeName(doc.Name)))
	h.Set("Content-Type", mimeType)
	if _, err := mw.CreatePart(h); err != nil {
		return "", err
	}
	tail := "\r\n--" + mw.Boundary() + "--\r\n"
	length := int64(head.Len()) + doc.Size + int64(len(tail))
	r := io.MultiReader(&head, &exact{r: body, left: doc.Size}, strings.NewReader(tail))
	resp, err := c.request(ctx, http.MethodPost, "documents/post_document/", nil, r, mw.FormDataContentType(), length)
	if err != nil {
		return "", err
	}
	var task string
	if err := readAnswer(resp, &task); err != nil {
		return "", err
	}
	return task, nil
}

// exact reads exactly left bytes of r: a body shorter or longer than the
// size the upload announced is an error, not a truncated document.
type exact struct {
	r    io.Reader
	left int64
}

func (e *exact) Read(p []byte) (int, error) {
	if e.left <= 0 {
		var one [1]byte
		if n, _ := io.ReadFull(e.r, one[:]); n > 0 {
			return 0, errors.New("document body longer than its size")
		}
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) {
		if e.left > 0 {
			return n, fmt.Errorf("document body %d bytes shorter than its size", e.left)
		}
		err = nil
	}
	return n, err
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}

// Open returns the client of a stored integration: ParseConfig, then New.
func Open(in *docflow.Integration, o Options) (*Client, error) {
	cfg, err := ParseConfig(in)
	if err != nil {
		return nil, err
	}
	return New(cfg, o)
}
