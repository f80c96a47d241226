package docflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// DestinationTester is the IntegrationTester of a destination type with a
// client: it builds the client (New), connects, probes (writes and removes
// a probe object) and closes it. A failure answers false with what failed
// and the far side's reason as the client classed it (DestinationError's
// reason: an HTTP status and API error code, "permission denied"), never
// an internal error.
type DestinationTester struct {
	New DestinationFactory
	// Timeout bounds the whole test (default 30 s).
	Timeout time.Duration
	// Log, when set, hears the cause of a failed test (for the server's
	// log; the message carries only the reason).
	Log func(in *Integration, err error)
}

var _ IntegrationTester = DestinationTester{}

// TestIntegration implements IntegrationTester.
func (t DestinationTester) TestIntegration(ctx context.Context, in *Integration) (ok bool, message string) {
	if t.New == nil {
		return false, fmt.Sprintf("testing %s is not supported yet", in.IntegrationType)
	}
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		// A client's panic is its test's failure, not the request's.
		if v := recover(); v != nil {
			ok, message = false, "the test failed unexpectedly"
			if t.Log != nil {
				t.Log(in, fmt.Errorf("panic: %v", v))
			}
		}
	}()
	c, err := t.New(in)
	if err != nil {
		return false, err.Error()
	}
	where := ""
	if l, ok := c.(DestinationLocation); ok {
		where = l.Location()
	}
	fail := func(stage string, err error) (bool, string) {
		if t.Log != nil {
			t.Log(in, err)
		}
		reason := DestinationReason(err)
		if where == "" {
			stage = strings.TrimSuffix(stage, " to")
		}
		if ctx.Err() != nil && !errors.Is(err, context.Canceled) {
			reason = fmt.Sprintf("no answer within %v", timeout)
		}
		if where != "" {
			return false, fmt.Sprintf("%s %s: %s", stage, where, reason)
		}
		return false, fmt.Sprintf("%s: %s", stage, reason)
	}
	if err := c.Connect(ctx); err != nil {
		return fail("Could not connect to", err)
	}
	defer c.Close(context.WithoutCancel(ctx)) //nolint:errcheck // the test's answer is given
	did, stage := "wrote and removed a test file", "Could not write a test file to"
	if w, ok := c.(DestinationProbeWords); ok {
		did, stage = w.ProbeWords(), "Could not check the right to write to"
	}
	if err := c.Probe(ctx); err != nil {
		return fail(stage, err)
	}
	if where == "" {
		return true, "Connected, and " + did
	}
	return true, fmt.Sprintf("Connected to %s, and %s", where, did)
}

// DestinationReason is what a user is shown of a destination's failure:
// its DestinationError's reason, else its class's words.
func DestinationReason(err error) string {
	var de *DestinationError
	if errors.As(err, &de) {
		if de.Reason != "" {
			return de.Reason
		}
		return destinationClassWords[de.Class]
	}
	return destinationClassWords[DestUnavailable]
}

var destinationClassWords = map[DestinationFailure]string{
	DestUnavailable: "the server could not be reached",
	DestRateLimited: "the server asked to slow down",
	DestAuth:        "the credentials were refused",
	DestForbidden:   "no permission to write there",
	DestFull:        "the destination is full",
	DestInvalid:     "the server refused the file",
	DestHostKey:     "the server's host key does not match host_key_fingerprint",
}
