package http

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/valyala/fasthttp"

	"docflow"
)

// codes maps application error codes to HTTP statuses: the one table.
var codes = map[string]int{
	docflow.EBADREQUEST:   fasthttp.StatusBadRequest,
	docflow.ECONFLICT:     fasthttp.StatusConflict,
	docflow.EINVALID:      fasthttp.StatusUnprocessableEntity,
	docflow.ENOTFOUND:     fasthttp.StatusNotFound,
	docflow.EUNAUTHORIZED: fasthttp.StatusUnauthorized,
	docflow.EFORBIDDEN:    fasthttp.StatusForbidden,
	docflow.ETOOLARGE:     fasthttp.StatusRequestEntityTooLarge,
	docflow.EUNSUPPORTED:  fasthttp.StatusUnsupportedMediaType,
	docflow.ERATELIMIT:    fasthttp.StatusTooManyRequests,
	docflow.ETIMEOUT:      fasthttp.StatusRequestTimeout,
	docflow.EBADGATEWAY:   fasthttp.StatusBadGateway,
	docflow.EUNAVAILABLE:  fasthttp.StatusServiceUnavailable,
	docflow.ENOTIMPL:      fasthttp.StatusNotImplemented,
	docflow.EINTERNAL:     fasthttp.StatusInternalServerError,
}

// ErrorStatusCode returns the HTTP status for an application error code.
func ErrorStatusCode(code string) int {
	if v, ok := codes[code]; ok {
		return v
	}
	return fasthttp.StatusInternalServerError
}

type errorBody struct {
	Detail     string               `json:"detail"`
	StatusCode int                  `json:"status_code,omitempty"`
	Errors     []docflow.FieldError `json:"errors,omitempty"`
}

// writeError writes err as {"detail": …} with the status from the table.
func writeError(c *fasthttp.RequestCtx, err error) {
	code := docflow.ErrorCode(err)
	status := ErrorStatusCode(code)
	body := errorBody{Detail: docflow.ErrorMessage(err)}
	var e *docflow.Error
	if errors.As(err, &e) {
		body.Errors = e.Fields
		if e.RetryAfter > 0 {
			c.Response.Header.Set("Retry-After", strconv.Itoa(e.RetryAfter))
		}
	}
	if status == fasthttp.StatusUnauthorized {
		c.Response.Header.Set("WWW-Authenticate", "Bearer")
	}
	writeJSON(c, status, body)
}

// writeJSON encodes v with the status.
func writeJSON(c *fasthttp.RequestCtx, status int, v any) {
	c.Response.Header.SetContentType("application/json")
	c.SetStatusCode(status)
	if v == nil {
		return
	}
	enc := json.NewEncoder(c)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		c.SetStatusCode(fasthttp.StatusInternalServerError)
	}
}

// Detail is the {"detail": …} body of success messages.
type Detail struct {
	Detail string `json:"detail"`
}

// invalid returns a 422 error naming one field.
func invalid(field, format string, args ...any) error {
	e := docflow.Errorf(docflow.EINVALID, format, args...)
	e.Fields = []docflow.FieldError{{Field: field, Message: e.Message}}
	return e
}
