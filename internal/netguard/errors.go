package netguard

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// Classes of failed connections: the words users see (test results,
// last_error, delivery logs) instead of what the far side said. A server
// chooses its banners, greetings, refusals and certificate names, so none
// of their text reaches a user; the cause stays in the error chain for the
// server's log.
const (
	FailPrivate   = "access to private or internal addresses is not allowed"
	FailNoHost    = "host not found"
	FailConnect   = "could not connect"
	FailTimeout   = "timed out"
	FailUntrusted = "TLS certificate not trusted"
	FailWrongHost = "TLS certificate not valid for this host"
	FailTLS       = "TLS handshake failed"
	FailClosed    = "connection closed by the server"
	FailProtocol  = "unexpected answer from the server"
	FailAuth      = "authentication failed"
	FailCancelled = "cancelled"
	FailOther     = "connection failed"
)

// Failure is a failed connection as a user may see it: Error is its class
// alone (one of the Fail… words, or a protocol client's own fixed words);
// Unwrap gives the cause, for logs and errors.Is.
type Failure struct {
	Class string
	Err   error
}

func (f *Failure) Error() string { return f.Class }
func (f *Failure) Unwrap() error { return f.Err }

// Public returns err as a Failure of its class (Describe); nil stays nil
// and a Failure is returned as it is.
func Public(err error) error {
	if err == nil {
		return nil
	}
	var f *Failure
	if errors.As(err, &f) {
		return f
	}
	return &Failure{Class: Describe(err), Err: err}
}

// Describe is the class of a failed connection: refused by the address
// rule, name not found, not reachable, timed out, a certificate not
// trusted or not for this host, another TLS failure, closed by the
// server; FailOther for anything else. A Failure in the chain gives its
// own class.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var (
		f       *Failure
		dns     *net.DNSError
		netErr  net.Error
		host    x509.HostnameError
		unknown x509.UnknownAuthorityError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
	)
	switch {
	case errors.As(err, &f):
		return f.Class
	case errors.Is(err, ErrPrivate):
		return FailPrivate
	case errors.Is(err, context.Canceled):
		return FailCancelled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return FailTimeout
	case errors.As(err, &dns):
		if dns.IsTimeout {
			return FailTimeout
		}
		return FailNoHost
	case errors.As(err, &host):
		return FailWrongHost
	case errors.As(err, &unknown), errors.As(err, &invalid), errors.As(err, &verify):
		return FailUntrusted
	case errors.As(err, &record), errors.As(err, &alert), strings.Contains(err.Error(), "tls: "):
		return FailTLS
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EADDRNOTAVAIL):
		return FailConnect
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return FailClosed
	case errors.As(err, &netErr) && netErr.Timeout():
		return FailTimeout
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return FailConnect
	}
	return FailOther
}
