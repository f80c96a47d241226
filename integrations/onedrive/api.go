package onedrive

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// api calls Graph with one Doer (refreshing tokens, or the folder
// browser's access token).
type api struct {
	o    Options
	auth httpdest.Doer
}

// call sends method url with body (JSON when contentType says so) and
// reads a 2xx answer's JSON into out.
func (a api) call(ctx context.Context, method, url, contentType string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, httpdest.RequestTimeout)
	defer cancel()
	resp, err := a.auth.Do(ctx, func(ctx context.Context, token string) (*http.Request, error) {
		var r io.Reader
		if body != nil {
			r = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, url, r)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/json")
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		return req, nil
	})
	if err != nil {
		return err
	}
	return readAnswer(resp, out)
}

// readAnswer reads a 2xx answer's JSON into out, or classes the error.
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

// graphError is the body of Graph's error answers.
type graphError struct {
	Error struct {
		Code string `json:"code"`
	} `json:"error"`
}

// failure is a classed error answer with its Graph error code.
type failure struct {
	*docflow.DestinationError
	code string
}

func (f *failure) Unwrap() error { return f.DestinationError }

// answerError classes an error answer: quotaLimitReached (or 507) full,
// accessDenied forbidden, activityLimitReached rate limited, the others by
// status; 429 and 503 wait for Retry-After.
func answerError(resp *http.Response) error {
	b, _ := httpdest.ReadBody(resp, httpdest.MaxErrorBody)
	var e graphError
	_ = json.Unmarshal(b, &e)
	code := e.Error.Code
	if len(code) > 64 {
		code = code[:64]
	}
	wait := httpdest.RetryAfter(resp.Header, time.Now())
	var class docflow.DestinationFailure
	switch code {
	case "quotaLimitReached", "insufficientStorage":
		class = docflow.DestFull
	case "accessDenied":
		class = docflow.DestForbidden
	case "activityLimitReached":
		class = docflow.DestRateLimited
	case "resourceModified":
		class = docflow.DestUnavailable
	}
	return &failure{
		DestinationError: httpdest.Fail(service, httpdest.Answer{Status: resp.StatusCode, Code: code, RetryAfter: wait}, class),
		code:             code,
	}
}
