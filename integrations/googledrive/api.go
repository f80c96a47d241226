package googledrive

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"docflow"
	"docflow/integrations/internal/httpdest"
)

// api calls Drive with one Doer (refreshing tokens, or the folder
// browser's access token).
type api struct {
	o    Options
	auth httpdest.Doer
}

// call sends the request body makes (a fresh reader per attempt, nil for
// none) and reads a 2xx answer's JSON into out; it returns the response's
// header.
func (a api) call(ctx context.Context, method, url string, header http.Header, body func() io.Reader, out any) (http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, httpdest.RequestTimeout)
	defer cancel()
	resp, err := a.auth.Do(ctx, func(ctx context.Context, token string) (*http.Request, error) {
		var r io.Reader
		if body != nil {
			r = body()
		}
		req, err := http.NewRequestWithContext(ctx, method, url, r)
		if err != nil {
			return nil, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		req.Header.Set("Authorization", "Bearer "+token)
		return req, nil
	})
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.Header, answerError(resp)
	}
	if out == nil {
		httpdest.Drain(resp)
		return resp.Header, nil
	}
	b, err := httpdest.ReadBody(resp, httpdest.MaxJSONBody)
	if err != nil {
		return nil, httpdest.Transport(service, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, docflow.DestFail(docflow.DestUnavailable, service+": unexpected answer", err)
	}
	return resp.Header, nil
}

// driveError is the body of Drive's error answers.
type driveError struct {
	Error struct {
		Errors []struct {
			Reason string `json:"reason"`
		} `json:"errors"`
		Status string `json:"status"`
	} `json:"error"`
}

// failure is a classed error answer with Drive's reason.
type failure struct {
	*docflow.DestinationError
	reason string
}

func (f *failure) Unwrap() error { return f.DestinationError }

// answerError classes an error answer by Drive's reason:
// storageQuotaExceeded full; rateLimitExceeded, userRateLimitExceeded
// (Drive's 403 for throttling) rate limited; insufficientFilePermissions
// and notFound (the folder) forbidden; the others by status.
func answerError(resp *http.Response) error {
	b, _ := httpdest.ReadBody(resp, httpdest.MaxErrorBody)
	var e driveError
	_ = json.Unmarshal(b, &e)
	reason := e.Error.Status
	if len(e.Error.Errors) > 0 && e.Error.Errors[0].Reason != "" {
		reason = e.Error.Errors[0].Reason
	}
	if len(reason) > 64 {
		reason = reason[:64]
	}
	wait := httpdest.RetryAfter(resp.Header, time.Now())
	var class docflow.DestinationFailure
	switch reason {
	case "storageQuotaExceeded", "teamDriveFileLimitExceeded", "numChildrenInNonRootLimitExceeded":
		class = docflow.DestFull
	case "rateLimitExceeded", "userRateLimitExceeded", "sharingRateLimitExceeded":
		class = docflow.DestRateLimited
	case "insufficientFilePermissions", "insufficientParentPermissions", "appNotAuthorizedToFile", "domainPolicy", "notFound":
		class = docflow.DestForbidden
	}
	return &failure{
		DestinationError: httpdest.Fail(service, httpdest.Answer{Status: resp.StatusCode, Code: reason, RetryAfter: wait}, class),
		reason:           reason,
	}
}
