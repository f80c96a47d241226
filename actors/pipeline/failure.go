package pipeline

import (
	"context"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
	"docflow/actors"
)

// Error classes of a failed step attempt (metrics and logs).
const (
	ClassPanic       = "panic"
	ClassTimeout     = "timeout"
	ClassInvalid     = "invalid"
	ClassUnavailable = "unavailable"
	ClassError       = "error"
)

// errorClass names the kind of a step error.
func errorClass(err error) string {
	var perr *actors.PanicError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &perr):
		return ClassPanic
	case errors.Is(err, actors.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout
	}
	switch docflow.ErrorCode(err) {
	case docflow.EINVALID:
		return ClassInvalid
	case docflow.EUNAVAILABLE:
		return ClassUnavailable
	case docflow.ETIMEOUT:
		return ClassTimeout
	}
	return ClassError
}

// permanent reports a step error that no retry can cure: the document itself
// is at fault (EINVALID).
func permanent(err error) bool {
	var perr *actors.PanicError
	if errors.As(err, &perr) {
		return false
	}
	return docflow.ErrorCode(err) == docflow.EINVALID
}

// transientDB reports a database error worth retrying: the server is
// unreachable, restarting, overloaded, or the transaction lost a conflict.
// Errors in the statement or the data are not.
func transientDB(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "40", "55", "58", "XX":
			return true
		}
		return false
	}
	if docflow.ErrorCode(err) != docflow.EINTERNAL {
		return false // an application error
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// Anything else from the driver (closed connection, unexpected EOF).
	return true
}
