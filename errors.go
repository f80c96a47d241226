package docflow

import (
	"errors"
	"fmt"
)

// Application error codes. Transports map them to their own status codes
// (http/errors.go holds the one table for HTTP).
const (
	ECONFLICT     = "conflict"     // 409
	EINTERNAL     = "internal"     // 500
	EINVALID      = "invalid"      // 422 (validation)
	EBADREQUEST   = "bad_request"  // 400
	ENOTFOUND     = "not_found"    // 404
	EUNAUTHORIZED = "unauthorized" // 401
	EFORBIDDEN    = "forbidden"    // 403
	ETOOLARGE     = "too_large"    // 413
	EUNSUPPORTED  = "unsupported"  // 415 (media type)
	ERATELIMIT    = "rate_limited" // 429
	ETIMEOUT      = "timeout"      // 408
	EBADGATEWAY   = "bad_gateway"  // 502
	EUNAVAILABLE  = "unavailable"  // 503
	ENOTIMPL      = "not_implemented"
)

// FieldError names one invalid field of a request (422 bodies carry a list).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is the application error: a code, a message safe to show a client,
// and optional details.
type Error struct {
	Code    string
	Message string
	// Fields lists validation failures (EINVALID only).
	Fields []FieldError
	// RetryAfter, in seconds, for ERATELIMIT.
	RetryAfter int
}

func (e *Error) Error() string {
	return fmt.Sprintf("docflow error: code=%s message=%s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the root *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err, or "Internal server
// error" for errors that are not *Error.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal server error"
}
