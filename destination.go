package docflow

import (
	"context"
	"errors"
	"io"
	"time"
)

// DestinationDoc is what a destination receives of one document: the
// file's identity, the name the integration's filename_template gave it
// (already made safe for the destination: no path separators, no "..",
// nothing that leaves the destination's folder) and the metadata some
// destinations store beside it (Paperless-ngx's title, tags and
// correspondent; an e-mail's subject).
type DestinationDoc struct {
	FileID int64
	// Name is the file name to store, e.g. "2026-11-29 Invoice ACME.pdf".
	Name     string
	MimeType string
	// Size is the length of the body in bytes.
	Size int64

	Title            string
	Date             string // YYYY-MM-DD, or ""
	Category         string
	Correspondent    string
	Tags             []string
	OriginalFilename string
	// Metadata is the document's AI metadata (ai_metadata), as stored.
	Metadata map[string]any
}

// DestinationClient delivers documents to one configured destination (one
// integration). It has the shape of every integration client: Connect
// opens the connection and authenticates, Close releases it; Deliver and
// Probe are its actions. The integration's actor owns it, so calls never
// overlap; it need not be safe for concurrent use.
type DestinationClient interface {
	// Connect dials and authenticates (an HTTP-based client may only
	// check its credentials, or do nothing until the first call).
	Connect(ctx context.Context) error
	// Close releases the connection.
	Close(ctx context.Context) error
	// Deliver stores body (doc.Size bytes, read once, never held whole in
	// memory) as doc.Name in the destination's folder. Delivering the same
	// name again replaces what the earlier delivery stored: it never makes
	// a second copy. It returns where the document is now (a remote path,
	// a URL or an id) for the file's delivery record. Errors are
	// DestinationErrors, or carry one.
	Deliver(ctx context.Context, doc DestinationDoc, body io.Reader) (remotePath string, err error)
	// Probe checks that the destination can be reached, that the
	// credentials are accepted and that the folder or bucket is writable,
	// by writing and removing a small probe object. Its error says why not,
	// in the far side's own terms where it gave a reason (an HTTP status
	// and its API error code, "550 Permission denied"), never a banner or
	// page of text.
	Probe(ctx context.Context) error
}

// DestinationFailure classes a failed delivery or probe, which decides
// what happens next.
type DestinationFailure string

// Classes of DestinationError.
const (
	// DestUnavailable: the far side could not be reached, timed out, lost
	// the connection or answered a server error. Retried with backoff;
	// the client is reconnected first.
	DestUnavailable DestinationFailure = "unavailable"
	// DestRateLimited: the far side asked to slow down (429, 503 with
	// Retry-After). Retried after RetryAfter.
	DestRateLimited DestinationFailure = "rate_limited"
	// DestAuth: the credentials were refused (after one token refresh for
	// OAuth clients). Retried with backoff (an administrator may fix the
	// integration meanwhile), and shown in the integration's last_error.
	DestAuth DestinationFailure = "auth"
	// DestForbidden: the credentials are valid but may not write there.
	DestForbidden DestinationFailure = "forbidden"
	// DestFull: the far side's disk or quota is full.
	DestFull DestinationFailure = "full"
	// DestInvalid: the destination refused this document or name for good
	// (a name it cannot store, a type it does not take); not retried.
	DestInvalid DestinationFailure = "invalid"
	// DestHostKey: an SSH host key did not match the pinned fingerprint.
	// Never accepted silently; retried only after the integration changes.
	DestHostKey DestinationFailure = "host_key"
)

// DestinationError is a destination client's failure: its class, the
// reason a user may be shown (the far side's status and error code, or a
// fixed phrase) and the cause, for the server's log.
type DestinationError struct {
	Class  DestinationFailure
	Reason string
	// RetryAfter is the wait the far side asked for (DestRateLimited).
	RetryAfter time.Duration
	Err        error
}

func (e *DestinationError) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return string(e.Class)
}

func (e *DestinationError) Unwrap() error { return e.Err }

// DestFail builds a DestinationError.
func DestFail(class DestinationFailure, reason string, cause error) *DestinationError {
	return &DestinationError{Class: class, Reason: reason, Err: cause}
}

// DestinationFailureOf returns err's class: that of the DestinationError
// it carries, else DestUnavailable (an error a client did not class is
// taken as one that another attempt may not meet).
func DestinationFailureOf(err error) DestinationFailure {
	var de *DestinationError
	if errors.As(err, &de) {
		return de.Class
	}
	return DestUnavailable
}

// DestinationLocation is implemented by clients that can say where they
// deliver, for messages ("folder ann/invoices", "bucket docs, prefix
// scans/", "https://dav.example.com/docs"): never credentials.
type DestinationLocation interface {
	Location() string
}

// DestinationProbeWords is implemented by clients whose Probe checks the
// right to write without writing (Paperless numbers and keeps every
// document it consumes): ProbeWords says what the probe checked, for the
// test's message ("the token may add documents").
type DestinationProbeWords interface {
	ProbeWords() string
}

// DestinationNamer is implemented by clients of destinations that refuse
// some characters in names (OneDrive's ":*?<>|"): the engine passes each
// name made from the filename_template through DestinationName before
// Deliver. It returns a name that still passes CheckDestinationName.
type DestinationNamer interface {
	DestinationName(name string) string
}

// DestinationFactory builds the client of one destination integration
// from its record (config with defaults, credentials decrypted), without
// I/O. An error says why the configuration cannot work (a CA that does not
// parse); the integration's delivery and test report it.
type DestinationFactory func(in *Integration) (DestinationClient, error)

// DestinationFactories maps a destination type (upper case) to its
// factory. internal/app builds it once; it gives every type in it a
// tester (DestinationTester) and a delivery actor.
type DestinationFactories map[string]DestinationFactory

// DestFailHTTP classes an HTTP answer of a destination's server: 401 is
// DestAuth; 403 DestForbidden; 429, and 503 with a Retry-After,
// DestRateLimited; 507 DestFull; 408, 423 and 425 DestUnavailable; other 4xx (413 too large included)
// DestInvalid; 5xx and anything else DestUnavailable. reason is what a
// user is shown (the status and the API's own error code or message);
// retryAfter is the wait the server asked for.
func DestFailHTTP(status int, reason string, retryAfter time.Duration, cause error) *DestinationError {
	class := DestUnavailable
	switch {
	case status == 401:
		class = DestAuth
	case status == 403:
		class = DestForbidden
	case status == 429, status == 503 && retryAfter > 0:
		class = DestRateLimited
	case status == 507:
		class = DestFull
	case status == 408, status == 423, status == 425:
		class = DestUnavailable
	case status >= 400 && status < 500:
		class = DestInvalid
	}
	return &DestinationError{Class: class, Reason: reason, RetryAfter: retryAfter, Err: cause}
}
