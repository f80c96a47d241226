// Package httpdest holds what the HTTP-based destination clients (Paperless-ngx,
// Dropbox, Google Drive, OneDrive) share: how an HTTP answer or a failed
// request becomes a docflow.DestinationError, the Retry-After header, and
// an OAuth refresh-token source that refreshes an expired access token
// once and sends the call again.
//
// What users see of a failure (the error's Reason) is the service's name,
// the HTTP status and the API's own error code: never the text of an
// answer, which for a server a user configured may come from anywhere.
package httpdest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/internal/netguard"
)

// RequestTimeout bounds one request of a cloud client, a chunk's upload
// included (a chunk is a few MiB): a server that stops answering does not
// hold a delivery until its own deadline.
const RequestTimeout = 5 * time.Minute

// MaxErrorBody bounds how much of an error answer is read.
const MaxErrorBody = 64 << 10

// MaxJSONBody bounds how much of a successful JSON answer is read.
const MaxJSONBody = 8 << 20

// Transport classes a request that got no answer: DestUnavailable, in
// netguard's fixed words (a refused private address keeps its own words).
func Transport(service string, err error) error {
	var de *docflow.DestinationError
	if errors.As(err, &de) {
		return err
	}
	return docflow.DestFail(docflow.DestUnavailable, service+": "+netguard.Describe(err), err)
}

// Answer is an HTTP error answer as a provider's client read it.
type Answer struct {
	Status int
	// Code is the API's error code ("path/insufficient_space",
	// "storageQuotaExceeded", "quotaLimitReached"), "" when it gave none.
	Code       string
	RetryAfter time.Duration
}

// Fail classes an error answer by its HTTP status (docflow.DestFailHTTP,
// the one rule of every HTTP-based destination); class, when not "",
// overrides it (a provider that knows its error code better). The reason
// reads "<service> answered HTTP <status> (<code>)".
func Fail(service string, a Answer, class docflow.DestinationFailure) *docflow.DestinationError {
	reason := fmt.Sprintf("%s answered HTTP %d", service, a.Status)
	if a.Code != "" {
		reason += " (" + a.Code + ")"
	}
	e := docflow.DestFailHTTP(a.Status, reason, a.RetryAfter, fmt.Errorf("%s: HTTP %d %s", service, a.Status, a.Code))
	if class != "" {
		e.Class = class
	}
	if e.Class != docflow.DestRateLimited {
		e.RetryAfter = 0
	}
	return e
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date
// (0 when absent, unreadable or past).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// ReadBody reads at most limit bytes of resp's body and closes it.
func ReadBody(resp *http.Response, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("answer longer than %d bytes", limit)
	}
	return b, nil
}

// Drain discards what is left of resp's body (bounded, so the connection
// may be reused) and closes it.
func Drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxErrorBody))
	resp.Body.Close()
}
