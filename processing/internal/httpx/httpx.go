// Package httpx holds the retry loop and JSON helpers shared by the network
// providers (chat metadata extraction, embeddings, cloud OCR).
package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// MaxResponseBytes bounds what is read from a provider reply.
const MaxResponseBytes = 32 << 20

// Retry runs an attempt up to Attempts times, each under its own Timeout,
// sleeping Backoff, 2×Backoff, … between attempts.
type Retry struct {
	Attempts int
	Timeout  time.Duration
	Backoff  time.Duration
}

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// Permanent marks an error that another attempt cannot fix (a 401, a 400).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err was marked Permanent.
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}

// Do runs fn until it succeeds, returns a Permanent error, the attempts are
// used up or ctx ends. The last error is returned, unwrapped from Permanent.
func (r Retry) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	attempts := max(r.Attempts, 1)
	var err error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			wait := r.Backoff << (i - 1)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
			case <-t.C:
			}
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if r.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, r.Timeout)
		}
		err = fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		if IsPermanent(err) {
			return errors.Unwrap(err)
		}
		if ctx.Err() != nil {
			return err
		}
		if i+1 < attempts && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("attempt %d timed out after %s: %w", i+1, r.Timeout, err)
		}
	}
	return fmt.Errorf("after %d attempts: %w", attempts, err)
}

// StatusError is a non-2xx reply.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body)
}

// CheckStatus turns a non-2xx reply into a *StatusError, Permanent unless a
// retry may help (408, 409, 425, 429 and 5xx).
func CheckStatus(resp *http.Response) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	err := &StatusError{Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	switch resp.StatusCode {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return err
	}
	if resp.StatusCode >= 500 {
		return err
	}
	return Permanent(err)
}

// PostJSON sends body as JSON and decodes a 2xx JSON reply into out.
func PostJSON(ctx context.Context, c *http.Client, url string, header http.Header, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return Permanent(fmt.Errorf("encode request: %w", err))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return Permanent(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := CheckStatus(resp); err != nil {
		return err
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxResponseBytes)).Decode(out); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	return nil
}

// JoinURL appends a path to a base URL without doubling the slash.
func JoinURL(base, path string) string {
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}
