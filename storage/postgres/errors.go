package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
)

// dbError gives a driver error a docflow code, so that callers decide on
// the code (retry while the database is away, skip what is gone) without
// reading PostgreSQL's error codes. Its text is the driver error's.
type dbError struct {
	err  error
	code *docflow.Error
}

func (e *dbError) Error() string   { return e.err.Error() }
func (e *dbError) Unwrap() []error { return []error{e.code, e.err} }

// dbErr maps a driver error to a docflow code:
//   - the server unreachable, restarting, overloaded, out of resources, or
//     a transaction that lost a conflict (SQLSTATE classes 08, 53, 57, 40,
//     55, 58, XX), and anything else that is no statement or data error
//     (a closed connection, an unexpected EOF, a timeout): EUNAVAILABLE;
//   - a foreign key violation (23503: the row referred to is gone):
//     ENOTFOUND;
//   - any other statement or data error: unchanged (EINTERNAL).
//
// nil, a cancelled context and errors that carry a docflow code already
// are returned as they are.
func dbErr(err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var de *docflow.Error
	if errors.As(err, &de) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23503":
			return &dbError{err: err, code: docflow.Errorf(docflow.ENOTFOUND, "Referenced record not found")}
		case len(pgErr.Code) >= 2:
			switch pgErr.Code[:2] {
			case "08", "53", "57", "40", "55", "58", "XX":
				return &dbError{err: err, code: docflow.Errorf(docflow.EUNAVAILABLE, "Database unavailable")}
			}
		}
		return err
	}
	return &dbError{err: err, code: docflow.Errorf(docflow.EUNAVAILABLE, "Database unavailable")}
}

// mapDBError applies dbErr to *err (deferred by the methods the pipeline
// engine calls).
func mapDBError(err *error) { *err = dbErr(*err) }

// retryConflicts runs fn, a whole transaction, again when PostgreSQL chose
// it as a deadlock's victim (40P01) or as a serialization failure's
// (40001), which leaves nothing done: at most attempts times, pausing a
// little longer each time. Statements whose cascades lock rows in another
// order than the pipeline's transactions (deleting a pipeline sets
// pipeline_id on files and runs in flight) need it.
func retryConflicts(ctx context.Context, attempts int, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		var pgErr *pgconn.PgError
		if err == nil || attempt >= attempts || !errors.As(err, &pgErr) || (pgErr.Code != "40P01" && pgErr.Code != "40001") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(attempt) * 100 * time.Millisecond):
		}
	}
}
