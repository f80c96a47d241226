package paperless

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// request sends method path (relative to the API root) with the token.
// Requests without a body are bounded by Options.Timeout.
func (c *Client) request(ctx context.Context, method, path string, q url.Values, body io.Reader, contentType string, length int64) (*http.Response, error) {
	u := c.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Token "+c.cfg.Token)
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if body != nil {
		req.ContentLength = length
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, httpdest.Transport(service, err)
	}
	return resp, nil
}

// call sends a small request and reads a 2xx answer's JSON into out.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	var body io.Reader
	var length int64
	ct := ""
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body, length, ct = bytes.NewReader(b), int64(len(b)), "application/json"
	}
	resp, err := c.request(ctx, method, path, q, body, ct, length)
	if err != nil {
		return err
	}
	return readAnswer(resp, out)
}

func readAnswer(resp *http.Response, out any) error {
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return answerError(resp)
	}
	if out == nil {
		httpdest.Drain(resp)
		return nil
	}
	b, err := httpdest.ReadBody(resp, httpdest.MaxJSONBody)
	if err != nil {
		return httpdest.Transport(service, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return docflow.DestFail(docflow.DestUnavailable, service+": unexpected answer", err)
	}
	return nil
}

// answerError classes an error answer by its status. A 400 names the
// fields Paperless refused (its validation errors are keyed by field);
// what Paperless wrote about them is not repeated: the server is one a
// user configured, and its text stays in the log.
func answerError(resp *http.Response) error {
	b, _ := httpdest.ReadBody(resp, httpdest.MaxErrorBody)
	code := ""
	if resp.StatusCode == http.StatusBadRequest {
		var fields map[string]json.RawMessage
		if json.Unmarshal(b, &fields) == nil {
			var names []string
			for k := range fields {
				if len(k) <= 40 && strings.Trim(k, "abcdefghijklmnopqrstuvwxyz_") == "" {
					names = append(names, k)
				}
			}
			sort.Strings(names)
			if len(names) > 0 {
				code = "invalid " + strings.Join(names, ", ")
			}
		}
	}
	return httpdest.Fail(service, httpdest.Answer{Status: resp.StatusCode, Code: code, RetryAfter: httpdest.RetryAfter(resp.Header, time.Now())}, "")
}
