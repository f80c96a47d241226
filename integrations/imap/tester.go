package imap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// Tester tests IMAP integrations: it logs in and selects the folder.
type Tester struct {
	// Timeout bounds the whole test (default 30 s).
	Timeout time.Duration
	// Dial, when set, opens the connection (Config.Dial).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Log hears the cause of a failed test (the server's own words, which
	// the message never carries); nil logs nothing.
	Log *zerolog.Logger
}

var _ docflow.IntegrationTester = Tester{}

// TestIntegration connects with in's configuration, logs in and selects
// the folder; on failure the message says what failed in fixed words
// (Describe: could not connect, timed out, certificate not trusted,
// authentication failed…), never the server's text nor the credentials.
func (t Tester) TestIntegration(ctx context.Context, in *docflow.Integration) (bool, string) {
	cfg, err := ParseConfig(in)
	if err != nil {
		return false, err.Error()
	}
	cfg.Dial = t.Dial
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	k, err := New(cfg, nil)
	if err != nil {
		return false, err.Error()
	}
	if err := k.Connect(ctx); err != nil {
		if t.Log != nil {
			t.Log.Info().Err(err).Int64("integration", in.ID).Str("host", cfg.Host).Int("port", cfg.Port).
				Msg("imap: integration test failed")
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return false, fmt.Sprintf("No answer from %s:%d within %v", cfg.Host, cfg.Port, timeout)
		}
		return false, Describe(err)
	}
	idle := ""
	if k.CanIdle() {
		idle = "; the server offers IDLE"
	}
	msg := fmt.Sprintf("Logged in to %s:%d and opened folder %q%s", cfg.Host, cfg.Port, cfg.Folder, idle)
	k.Close(ctx) //nolint:errcheck
	return true, msg
}
