package email

import (
	"context"
	"errors"
	"net/textproto"
	"regexp"
	"strings"

	gomail "github.com/wneessen/go-mail"

	"docflow"
	"docflow/integrations/internal/upload"
	"docflow/internal/netguard"
)

// Words of e-mail failures users see beside netguard's classes and the
// server's replies.
const (
	FailNoTLS    = "the mail server does not offer STARTTLS; a server of one's own must encrypt unless INTEGRATION_ALLOWED_HOSTS names it"
	FailNoLogin  = "the mail server offers no login method docflow may use on this connection (no password is sent unencrypted)"
	FailDocument = "the document could not be read"
)

var enhanced = regexp.MustCompile(`^([245])\.(\d{1,3})\.(\d{1,3})\b`)

// replyClass classes an SMTP reply (RFC 5321, 4.2.3) by its code and its
// enhanced status code (RFC 3463), when the server gives one.
func replyClass(code int, msg string) docflow.DestinationFailure {
	esc := enhanced.FindString(strings.TrimSpace(msg))
	switch {
	case code == 530 || code == 534 || code == 535 || code == 538 || esc == "5.7.8":
		// Authentication required, too weak, or refused.
		return docflow.DestAuth
	case esc == "4.2.2" || esc == "5.2.2" || esc == "4.3.1" || esc == "5.3.1" || code == 452:
		// A mailbox or the mail system is full.
		return docflow.DestFull
	case code == 552 || esc == "5.3.4" || esc == "5.2.3":
		// The message is too large.
		return docflow.DestInvalid
	case code >= 500 && strings.HasPrefix(esc, "5.7."):
		// Policy: relaying denied, sender not allowed.
		return docflow.DestForbidden
	case code == 550 || code == 551 || code == 553:
		// A mailbox unavailable or not allowed, relaying refused.
		return docflow.DestForbidden
	case code >= 500:
		// 554 and the rest: the message was refused for good.
		return docflow.DestInvalid
	}
	// 421, 450, 451, 454 and other temporary answers.
	return docflow.DestUnavailable
}

// classify turns an error of a session into a DestinationError: a reply
// by its class with its code and reason; a failed connection by
// netguard's words; a failure of the document's own reader as what it
// is.
func classify(ctx context.Context, err error) error {
	var (
		de   *docflow.DestinationError
		te   *textproto.Error
		src  *sourceError
		sess *sessionError
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &de):
		return err
	case ctx.Err() != nil:
		return docflow.DestFail(docflow.DestUnavailable, netguard.Describe(ctx.Err()), err)
	case errors.As(err, &src):
		return docflow.DestFail(docflow.DestUnavailable, FailDocument, err)
	case errors.Is(err, netguard.ErrPrivate):
		return docflow.DestFail(docflow.DestForbidden, netguard.FailPrivate, err)
	case errors.As(err, &te):
		class := replyClass(te.Code, te.Msg)
		if errors.As(err, &sess) && strings.Contains(err.Error(), "SMTP AUTH failed") && class != docflow.DestUnavailable {
			class = docflow.DestAuth
		}
		return docflow.DestFail(class, upload.Reply(te.Code, te.Msg), err)
	case errors.As(err, &sess) && strings.Contains(err.Error(), "does not support STARTTLS"):
		return docflow.DestFail(docflow.DestForbidden, FailNoTLS, err)
	case errors.As(err, &sess) && noLogin(err):
		return docflow.DestFail(docflow.DestAuth, FailNoLogin, err)
	}
	return docflow.DestFail(docflow.DestUnavailable, netguard.Describe(err), err)
}

// noLogin: go-mail found no authentication mechanism it may use.
func noLogin(err error) bool {
	for _, e := range []error{gomail.ErrNoSupportedAuthDiscovered, gomail.ErrPlainAuthNotSupported,
		gomail.ErrLoginAuthNotSupported, gomail.ErrCramMD5AuthNotSupported} {
		if errors.Is(err, e) {
			return true
		}
	}
	return strings.Contains(err.Error(), "does not support SMTP AUTH")
}
