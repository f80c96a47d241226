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

	"github.com/cenkalti/backoff/v5"
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
	tries, stopped := 0, false
	var last error
	op := func() (struct{}, error) {
		tries++
		actx, cancel := ctx, context.CancelFunc(func() {})
		if r.Timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, r.Timeout)
		}
		err := fn(actx)
		cancel()
		switch {
		case err == nil:
			return struct{}{}, nil
		case IsPermanent(err):
			stopped = true
			return struct{}{}, backoff.Permanent(errors.Unwrap(err))
		case ctx.Err() != nil:
			stopped = true
			return struct{}{}, backoff.Permanent(err)
		}
		if tries < attempts && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("attempt %d timed out after %s: %w", tries, r.Timeout, err)
		}
		last = err
		return struct{}{}, err
	}
	// Backoff, 2×Backoff, … with no jitter and no cap below the last wait.
	exp := &backoff.ExponentialBackOff{InitialInterval: r.Backoff, Multiplier: 2,
		MaxInterval: r.Backoff << min(attempts, 30)}
	_, err := backoff.Retry(ctx, op, backoff.WithBackOff(exp),
		backoff.WithMaxTries(uint(attempts)), backoff.WithMaxElapsedTime(0))
	var perm *backoff.PermanentError
	switch {
	case err == nil:
		return nil
	case stopped && errors.As(err, &perm):
		return perm.Unwrap()
	case stopped:
		return err
	case ctx.Err() != nil && tries < attempts:
		return fmt.Errorf("%w (last error: %v)", ctx.Err(), last)
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
