package ftp

import (
	"context"
	"errors"
	"net/textproto"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Words of FTP failures users see beside netguard's classes and the
// server's replies.
const (
	FailLogin      = "login refused"
	FailTLSRefused = "the server refused TLS (AUTH TLS); set config.tls to none only for a server on a trusted network"
)

// replyClass classes an FTP reply code (RFC 959, 4.2; RFC 3659; RFC
// 2228): what the delivery does next.
func replyClass(code int) docflow.DestinationFailure {
	switch code {
	case 430, 530, 532:
		// Not logged in; logged in but needing an account for storing.
		return docflow.DestAuth
	case 452, 552:
		// Insufficient storage; storage allocation exceeded.
		return docflow.DestFull
	case 550, 553:
		// File unavailable (no access, no such folder); file name not
		// allowed, which servers such as vsftpd also answer when they
		// may not create the file there.
		return docflow.DestForbidden
	case 500, 501, 502, 504, 551:
		// The server does not know or take the command, or the page
		// type: it will not do this later either.
		return docflow.DestInvalid
	}
	// 421 closing, 425/426 data connection, 450/451 busy or local error,
	// anything else: worth another attempt.
	return docflow.DestUnavailable
}

// replyCode is the code of the FTP reply err carries, or 0.
func replyCode(err error) int {
	var te *textproto.Error
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

func isReply(err error) bool { return replyCode(err) != 0 }

func reply(code int, msg string) string { return upload.Reply(code, msg) }

// loginError is a refused login.
type loginError struct{ err error }

func (e *loginError) Error() string { return "login: " + e.err.Error() }
func (e *loginError) Unwrap() error { return e.err }

// tlsRefused is a refused AUTH TLS.
type tlsRefused struct{ err error }

func (e *tlsRefused) Error() string { return "AUTH TLS: " + e.err.Error() }
func (e *tlsRefused) Unwrap() error { return e.err }

// classify turns an error of a connection or a command into a
// DestinationError: a reply by its code's class with its code and
// reason; a failed connection by netguard's words; a failure of the
// document's own reader as what it is.
func (c *Client) classify(ctx context.Context, err error) error {
	var (
		de    *docflow.DestinationError
		te    *textproto.Error
		src   *sourceError
		login *loginError
		refus *tlsRefused
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case ctx.Err() != nil:
		return docflow.DestFail(docflow.DestUnavailable, netguard.Describe(ctx.Err()), err)
	case errors.As(err, &src):
		return docflow.DestFail(docflow.DestUnavailable, "the document could not be read", err)
	case errors.Is(err, netguard.ErrPrivate):
		return docflow.DestFail(docflow.DestForbidden, netguard.FailPrivate, err)
	case errors.As(err, &refus):
		return docflow.DestFail(docflow.DestUnavailable, FailTLSRefused, err)
	case errors.As(err, &te):
		class := replyClass(te.Code)
		if errors.As(err, &login) && class != docflow.DestUnavailable {
			class = docflow.DestAuth
		}
		return docflow.DestFail(class, reply(te.Code, te.Msg), err)
	case errors.As(err, &login) && netguard.Describe(login.err) == netguard.FailOther:
		// The library reports an unexpected answer to USER by its text
		// alone.
		return docflow.DestFail(docflow.DestAuth, FailLogin+": "+upload.Reply(0, login.err.Error()), err)
	}
	return docflow.DestFail(docflow.DestUnavailable, netguard.Describe(err), err)
}
