package imap

import (
	"errors"
	"fmt"

	"github.com/emersion/go-imap/v2"

	"docflow"
	"docflow/internal/netguard"
)

// Words of the IMAP failures users see, beside netguard's classes. They
// name what failed in the client's own words; the server's text (its
// greeting, its NO and BAD answers, its certificate's names) stays in the
// error chain, for the server's log.
const (
	FailLogin     = "authentication failed (login refused by the server)"
	FailStartTLS  = "the server refused STARTTLS"
	FailUntrusted = "the server's certificate is not trusted (set ca_certificate to the certificate of the CA that signed it)"
	FailWrongHost = "the server's certificate is not valid for this host"
	failStore     = "mail could not be stored (see the server log)"
)

// Describe is how err reads to a user (a test's message, a source's
// last_error): the words of the client or of docflow, never the
// server's. Errors of docflow (a daily limit reached, a blocked owner)
// keep their message; failures of the connection and refusals of the
// server are their class.
func Describe(err error) string {
	var s *sinkError
	var f *netguard.Failure
	var ie *imap.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &s):
		if docflow.ErrorCode(s.err) == docflow.EINTERNAL {
			return failStore
		}
		return docflow.ErrorMessage(s.err)
	case errors.As(err, &f):
		return f.Class
	case errors.As(err, &ie):
		return "the server refused a command"
	}
	return netguard.Describe(err)
}

// refused is the server's refusal of op, in the client's words.
func refused(op string, err error) error {
	return &netguard.Failure{Class: "the server refused " + op, Err: fmt.Errorf("%s: %w", op, err)}
}

// sinkError is an error of the sink (docflow's storage), not of the
// server: Describe shows docflow's message, or that storing failed.
type sinkError struct{ err error }

func (e *sinkError) Error() string { return e.err.Error() }
func (e *sinkError) Unwrap() error { return e.err }

func sinkErr(err error) error {
	if err == nil {
		return nil
	}
	var s *sinkError
	if errors.As(err, &s) {
		return err
	}
	return &sinkError{err}
}
