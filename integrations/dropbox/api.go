package dropbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf16"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// api calls Dropbox's endpoints with one Doer (refreshing tokens, or the
// folder browser's access token).
type api struct {
	o    Options
	auth httpdest.Doer
}

// rpc calls an RPC endpoint (JSON in, JSON out) on the API host.
func (a api) rpc(ctx context.Context, route string, arg, out any) error {
	body, err := json.Marshal(arg)
	if err != nil {
		return err
	}
	return a.call(ctx, a.o.APIURL+"/2/"+route, "application/json", "", body, out)
}

// content calls a content-upload endpoint: the argument in the
// Dropbox-API-Arg header, the bytes as the body.
func (a api) content(ctx context.Context, route string, arg any, data []byte, out any) error {
	h, err := headerJSON(arg)
	if err != nil {
		return err
	}
	return a.call(ctx, a.o.ContentURL+"/2/"+route, "application/octet-stream", h, data, out)
}

func (a api) call(ctx context.Context, url, contentType, apiArg string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, httpdest.RequestTimeout)
	defer cancel()
	resp, err := a.auth.Do(ctx, func(ctx context.Context, token string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", contentType)
		if apiArg != "" {
			req.Header.Set("Dropbox-API-Arg", apiArg)
		}
		return req, nil
	})
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return answerError(resp)
	}
	b, err := httpdest.ReadBody(resp, httpdest.MaxJSONBody)
	if err != nil {
		return httpdest.Transport(service, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return docflow.DestFail(docflow.DestUnavailable, service+": unexpected answer", err)
	}
	return nil
}

// apiError is the body of Dropbox's error answers (400 is plain text).
type apiError struct {
	Summary string `json:"error_summary"`
	Error   struct {
		Tag           string `json:".tag"`
		RetryAfter    int64  `json:"retry_after"`
		CorrectOffset *int64 `json:"correct_offset"`
	} `json:"error"`
}

// failure is a classed error answer with what the session code needs.
type failure struct {
	*docflow.DestinationError
	summary       string
	correctOffset *int64
}

func (f *failure) Unwrap() error { return f.DestinationError }

// answerError classes an error answer: 409 by its error summary
// (insufficient_space full, no_write_permission forbidden,
// too_many_write_operations rate limited, anything else invalid), the
// others by status; 429 and 503 wait for Retry-After or the body's
// retry_after.
func answerError(resp *http.Response) error {
	b, _ := httpdest.ReadBody(resp, httpdest.MaxErrorBody)
	var e apiError
	_ = json.Unmarshal(b, &e)
	code := strings.TrimRight(e.Summary, "/.")
	wait := httpdest.RetryAfter(resp.Header, time.Now())
	if wait == 0 && e.Error.RetryAfter > 0 {
		wait = time.Duration(min(e.Error.RetryAfter, 86400)) * time.Second
	}
	var class docflow.DestinationFailure
	if resp.StatusCode == http.StatusConflict {
		switch {
		case strings.Contains(code, "insufficient_space"):
			class = docflow.DestFull
		case strings.Contains(code, "no_write_permission"), strings.Contains(code, "team_folder"):
			class = docflow.DestForbidden
		case strings.Contains(code, "too_many_write_operations"):
			class = docflow.DestRateLimited
			if wait == 0 {
				wait = time.Second
			}
		}
	}
	return &failure{
		DestinationError: httpdest.Fail(service, httpdest.Answer{Status: resp.StatusCode, Code: code, RetryAfter: wait}, class),
		summary:          code,
		correctOffset:    e.Error.CorrectOffset,
	}
}

// headerJSON encodes v for the Dropbox-API-Arg header: JSON whose
// characters above 0x7E are escaped (\uXXXX, surrogate pairs beyond the
// basic plane), as Dropbox requires of header values.
func headerJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var sb strings.Builder
	for _, r := range string(b) {
		switch {
		case r < 0x7f:
			sb.WriteRune(r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(&sb, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(&sb, `\u%04x`, r)
		}
	}
	return sb.String(), nil
}
