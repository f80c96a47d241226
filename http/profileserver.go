package http

import (
	"context"
	"errors"
	"net"
	nethttp "net/http"
	"net/http/pprof"
	"time"

	"github.com/rs/zerolog"
)

// Timeouts of the profile listener. A CPU profile or trace is streamed
// for as many seconds as asked (default 30), so a write may take longer
// than a scrape's: pprof refuses a duration beyond the write timeout.
const (
	profileReadTimeout  = 5 * time.Second
	profileWriteTimeout = 2 * time.Minute
)

// ProfileServer serves Go's runtime profiles of this process under
// /debug/pprof/ (DEBUG_PPROF_ADDR): heap, allocations, goroutines, CPU
// and execution traces, to find what grows or burns in a running
// process. Profiles show the process's internals (function names, stacks,
// allocation sites, command line), so it answers only on a loopback
// listener and only requests addressed to an IP address or localhost
// (a re-resolved name, DNS rebinding, reads nothing).
type ProfileServer struct {
	srv *nethttp.Server
	ln  net.Listener
}

// ServeProfiles starts serving the profiles on ln, which must be a
// loopback listener. Close stops it.
func ServeProfiles(ln net.Listener, log zerolog.Logger) (*ProfileServer, error) {
	if ListensBeyondLoopback(ln.Addr()) {
		return nil, errors.New("profiles are served on a loopback address only")
	}
	mux := nethttp.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	h := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if !localHost(r.Host) {
			w.WriteHeader(nethttp.StatusForbidden)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
	return &ProfileServer{ln: ln, srv: serveSmall(ln, h, profileReadTimeout, profileWriteTimeout, log, "profile listener stopped")}, nil
}

// Addr is the address the listener is bound to.
func (s *ProfileServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting requests and waits for those in flight (until
// ctx is done).
func (s *ProfileServer) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
