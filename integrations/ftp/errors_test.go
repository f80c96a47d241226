package ftp

import (
	"context"
	"net/textproto"
	"strings"
	"testing"

	"docflow"
)

// TestReplyClasses: the reply codes servers refuse with decide the class,
// and the reason is the code with the first line of the server's text.
func TestReplyClasses(t *testing.T) {
	c := &Client{}
	for _, tc := range []struct {
		code   int
		msg    string
		class  docflow.DestinationFailure
		reason string
	}{
		{530, "Login incorrect.", docflow.DestAuth, "530 Login incorrect."},
		{550, "Permission denied.", docflow.DestForbidden, "550 Permission denied."},
		{553, "Could not create file.", docflow.DestForbidden, "553 Could not create file."},
		{552, "Quota exceeded\nsecond line", docflow.DestFull, "552 Quota exceeded"},
		{452, "Insufficient storage space", docflow.DestFull, "452 Insufficient storage space"},
		{421, "Timeout.", docflow.DestUnavailable, "421 Timeout."},
		{451, "Failure writing to local file.", docflow.DestUnavailable, "451 Failure writing"},
		{425, "", docflow.DestUnavailable, "425"},
		{502, "Command not implemented.", docflow.DestInvalid, "502 Command"},
		{550, strings.Repeat("x", 300) + "\x07", docflow.DestForbidden, "550 " + strings.Repeat("x", 120) + "…"},
	} {
		err := c.classify(context.Background(), &textproto.Error{Code: tc.code, Msg: tc.msg})
		de := err.(*docflow.DestinationError)
		if de.Class != tc.class || de.Reason != tc.reason && !strings.HasPrefix(de.Reason, tc.reason) {
			t.Errorf("%d %q: %s %q", tc.code, tc.msg, de.Class, de.Reason)
		}
	}
	// A refused login is DestAuth whatever its code.
	err := c.classify(context.Background(), &loginError{&textproto.Error{Code: 550, Msg: "no"}})
	if docflow.DestinationFailureOf(err) != docflow.DestAuth {
		t.Fatal(err)
	}
}
