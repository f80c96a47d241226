package http

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestShutdownAtAnyMomentEndsServe: Shutdown may come while Serve is still
// starting on its goroutine, or before it: Serve then returns nil and its
// listener is closed, with no race on the server's state.
func TestShutdownAtAnyMomentEndsServe(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	for i, before := range []bool{false, false, false, true} {
		s := NewServer(Config{Log: e.Server.log, Settings: e.Settings, Tokens: e.Tokens, Sessions: e.Sessions,
			Version: "test", SessionSecret: "0123456789012345678901234567890123456789"})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		done := make(chan error, 1)
		if before {
			if err := s.Shutdown(ctx); err != nil {
				t.Fatalf("shutdown before serve: %v", err)
			}
			go func() { done <- s.Serve(ln) }()
		} else {
			go func() { done <- s.Serve(ln) }()
			if err := s.Shutdown(ctx); err != nil {
				t.Fatalf("round %d: shutdown: %v", i, err)
			}
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("round %d: serve returned %v after shutdown", i, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d (shutdown before serve: %v): serve still running 5 s after shutdown", i, before)
		}
		cancel()
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Fatalf("round %d: the listener still accepts after shutdown", i)
		}
	}
}
