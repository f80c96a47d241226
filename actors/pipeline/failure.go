package pipeline

import (
	"context"
	"errors"

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

// transientDB reports a storage error worth retrying: the database is
// unreachable, restarting, overloaded, or the transaction lost a conflict
// (the store says EUNAVAILABLE). Errors in the statement or the data are
// not.
func transientDB(err error) bool {
	return err != nil && !errors.Is(err, context.Canceled) && docflow.ErrorCode(err) == docflow.EUNAVAILABLE
}
