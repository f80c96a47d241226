package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"docflow/integrations/imap/imaptest"
	"docflow/internal/corpus"
	"docflow/internal/netguard"
)

// The workload: clients that put documents in through every way in
// (uploads and process-url with an Idempotency-Key, retried with the same
// key on every connection error; mail to the IMAP source) and ask for
// some to be processed again, and the servers the deployment calls (the
// files process-url fetches, the webhook receiver).

// docContent is the PDF of document name: born-digital, unique per name.
func docContent(name string) []byte {
	return corpus.TextPDF([][]string{{
		"Invoice " + name,
		"Chaos drill document " + name + ", a unique line so that no two documents share content.",
		"Amount due: 42.00 EUR. Reference " + name + ".",
	}})
}

// outcome is what the clients know of one document they put in.
type outcome struct {
	Name     string // the file name the document carries
	Channel  string // upload, url, email
	FileID   int64  // from the answer (0 for mail, or when given up)
	Attempts int    // requests sent (uploads and process-url)
	Replayed bool   // an answer was a replay of the key's first one
	GaveUp   string // why the client stopped retrying, "" when it got its answer
}

// client is the HTTP client of the workload, through netguard.
type client struct {
	http    *http.Client
	apis    []string // base URLs of the api processes
	retries atomic.Int64
	replays atomic.Int64
	giveUp  time.Duration
}

func newClient(apis []string, giveUp time.Duration) *client {
	hc := netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true, Timeout: 5 * time.Second},
		Timeout: 60 * time.Second})
	return &client{http: hc, apis: apis, giveUp: giveUp}
}

func (c *client) api() string { return c.apis[rand.IntN(len(c.apis))] }

// retryable reports whether an answer (or its absence) calls for the
// same request again with the same key: a connection error, a timeout,
// 409 (the key's first request still runs), 429, or a 5xx (a database
// restart, a process going down).
func retryable(status int, err error) bool {
	if err != nil {
		return true
	}
	return status == http.StatusConflict || status == http.StatusTooManyRequests || status >= 500
}

// send repeats one request, built by req for an api base URL, with the
// same Idempotency-Key until it has an answer that is not retryable or
// giveUp passes.
func (c *client) send(ctx context.Context, key string, req func(base string) (*http.Request, error), o *outcome) (int, []byte) {
	start := time.Now()
	backoff := 100 * time.Millisecond
	var last string
	for {
		r, err := req(c.api())
		if err != nil {
			o.GaveUp = err.Error()
			return 0, nil
		}
		r = r.WithContext(ctx)
		r.Header.Set("Idempotency-Key", key)
		o.Attempts++
		if o.Attempts > 1 {
			c.retries.Add(1)
		}
		resp, err := c.http.Do(r)
		status := 0
		var body []byte
		if err == nil {
			status = resp.StatusCode
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.Header.Get("Idempotent-Replayed") == "true" {
				o.Replayed = true
				c.replays.Add(1)
			}
		}
		if !retryable(status, err) {
			return status, body
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("%d %s", status, bytes.TrimSpace(body))
		}
		if ctx.Err() != nil || time.Since(start) > c.giveUp {
			o.GaveUp = fmt.Sprintf("no answer after %d attempts in %v; last: %s", o.Attempts, time.Since(start).Round(time.Second), last)
			return 0, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff + rand.N(backoff)):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

type created struct {
	FileID int64  `json:"file_id"`
	TaskID string `json:"task_id"`
	Status string `json:"status"`
}

// upload puts document name in through POST /api/upload.
func (c *client) upload(ctx context.Context, run, name string) outcome {
	o := outcome{Name: name, Channel: "upload"}
	content := docContent(name)
	status, body := c.send(ctx, run+"-"+name, func(base string) (*http.Request, error) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, err := mw.CreateFormFile("file", name)
		if err != nil {
			return nil, err
		}
		fw.Write(content) //nolint:errcheck
		mw.Close()
		r, err := http.NewRequest("POST", base+"/api/upload", &b)
		if err == nil {
			r.Header.Set("Content-Type", mw.FormDataContentType())
		}
		return r, err
	}, &o)
	c.record(&o, status, body)
	return o
}

// fetchURL puts document name in through POST /api/process-url, from the
// driver's file server.
func (c *client) fetchURL(ctx context.Context, run, name, files string) outcome {
	o := outcome{Name: name, Channel: "url"}
	req, _ := json.Marshal(map[string]string{"url": files + "/doc/" + name, "filename": name})
	status, body := c.send(ctx, run+"-"+name, func(base string) (*http.Request, error) {
		r, err := http.NewRequest("POST", base+"/api/process-url", bytes.NewReader(req))
		if err == nil {
			r.Header.Set("Content-Type", "application/json")
		}
		return r, err
	}, &o)
	c.record(&o, status, body)
	return o
}

func (c *client) record(o *outcome, status int, body []byte) {
	if o.GaveUp != "" {
		return
	}
	var cr created
	if status/100 != 2 || json.Unmarshal(body, &cr) != nil || cr.FileID == 0 {
		o.GaveUp = fmt.Sprintf("answered %d %s", status, bytes.TrimSpace(body))
		return
	}
	o.FileID = cr.FileID
}

// reprocess asks for file id to be processed again, retried on
// connection errors and 5xx (a repeat makes one more run, which the
// engine supersedes or runs: either is a run like any other).
func (c *client) reprocess(ctx context.Context, id int64) error {
	var last string
	for range 20 {
		r, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/api/files/%d/reprocess", c.api(), id), nil)
		if err != nil {
			return err
		}
		resp, err := c.http.Do(r)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
			if !retryable(resp.StatusCode, nil) {
				return errors.New(last)
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return errors.New(last)
}

// call sends one JSON request to the first api that answers, retried
// while the deployment comes up; it returns the decoded answer.
func (c *client) call(ctx context.Context, method, path string, in, out any) error {
	body, _ := json.Marshal(in)
	var last error
	for range 30 {
		for _, base := range c.apis {
			r, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
			if err != nil {
				return err
			}
			r.Header.Set("Content-Type", "application/json")
			resp, err := c.http.Do(r)
			if err != nil {
				last = err
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				last = fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
				if resp.StatusCode < 500 {
					return last
				}
				continue
			}
			if out != nil {
				return json.Unmarshal(b, out)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return last
}

// fileServer serves /doc/<name>: the content of document name, for
// process-url.
func fileServer() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/doc/")
		if !ok || name == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(docContent(name)) //nolint:errcheck
	})
}

// received is one webhook delivery the receiver took.
type received struct {
	ID     string // webhook-id
	Event  string
	FileID int64
	TaskID string
}

// receiver is the webhook endpoint: it records every delivery.
type receiver struct {
	mu  sync.Mutex
	got []received
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var ev struct {
		Event string         `json:"event"`
		Data  map[string]any `json:"data"`
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rec := received{ID: r.Header.Get("webhook-id"), Event: ev.Event}
	if v, ok := ev.Data["file_id"].(float64); ok {
		rec.FileID = int64(v)
	}
	rec.TaskID, _ = ev.Data["task_id"].(string)
	rc.mu.Lock()
	rc.got = append(rc.got, rec)
	rc.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// serve runs h on a free loopback port until ctx ends and returns its
// base URL and port.
func serve(ctx context.Context, h http.Handler) (string, int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", 0, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck
	go func() { <-ctx.Done(); srv.Close() }()
	port := ln.Addr().(*net.TCPAddr).Port
	return "http://127.0.0.1:" + strconv.Itoa(port), port, nil
}

// mailDocs builds mail number n with 1 to 3 PDF attachments and returns it
// with the attachments' names.
func mailDocs(run string, n int) ([]byte, []string) {
	var atts []imaptest.Attachment
	var names []string
	for j := 0; j <= n%3; j++ {
		name := fmt.Sprintf("%s-m%06d-%d.pdf", run, n, j)
		names = append(names, name)
		atts = append(atts, imaptest.Attachment{Name: name, ContentType: "application/pdf", Data: docContent(name)})
	}
	return imaptest.Mail(fmt.Sprintf("%s-mail-%d@chaos.example", run, n), "documents "+strconv.Itoa(n), atts...), names
}
