package http

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	stdlog "log"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

// Timeouts of the metrics listener: a scrape is one small request, so a
// client slower than these is cut off rather than holding a connection.
const (
	metricsReadTimeout  = 5 * time.Second
	metricsWriteTimeout = 10 * time.Second
	metricsIdleTimeout  = 60 * time.Second
)

// Probe paths. The API serves them (health.go), and so does a worker's
// metrics listener, so that an orchestrator probes every process alike
// (deploy/k8s).
const (
	LivePath  = "/api/diagnostic/healthz/live"
	ReadyPath = "/api/diagnostic/healthz/ready"
)

// readyTimeout bounds a readiness check of the metrics listener, as
// runChecks bounds the API's.
const readyTimeout = 3 * time.Second

// MetricsServer serves the Prometheus exposition of a process without the
// API (a worker) on an address of its own (WORKER_METRICS_ADDR). It answers
// GET (and HEAD) /metrics, the probes LivePath and ReadyPath, and 404 to
// anything else, with no body that would say what the process is.
type MetricsServer struct {
	srv *nethttp.Server
	ln  net.Listener
}

// ServeMetrics starts serving g on ln. token, called on each request,
// returns the bearer token a scraper must send (METRICS_TOKEN). Without
// one the endpoint answers only on a loopback listener (ListensBeyondLoopback
// false), and only requests addressed to an IP address or localhost, so a
// page whose name was re-resolved to 127.0.0.1 (DNS rebinding) reads
// nothing; on any other listener it answers 401 to everyone. The probes
// need no token (a probe cannot carry a secret) and say only ok or not:
// LivePath answers 200 while the process serves, ReadyPath 200 while
// ready (the database answers) returns nil, else 503; the reason is
// logged once each time readiness is lost. Close stops it.
func ServeMetrics(ln net.Listener, g prometheus.Gatherer, token func() string, ready func(context.Context) error, log zerolog.Logger) *MetricsServer {
	if g == nil || token == nil || ready == nil {
		panic("http: ServeMetrics needs a Gatherer, a token func and a readiness check")
	}
	var unready atomic.Bool
	beyond := ListensBeyondLoopback(ln.Addr())
	metrics := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		// Export what was gathered when one collector fails, as GET
		// /metrics on the API does.
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       metricsWriteTimeout - time.Second,
	})
	h := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.Method != nethttp.MethodGet && r.Method != nethttp.MethodHead {
			w.WriteHeader(nethttp.StatusNotFound)
			return
		}
		switch r.URL.Path {
		case "/metrics":
		case LivePath:
			probeAnswer(w, nethttp.StatusOK, `{"status":"ok"}`)
			return
		case ReadyPath:
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				if !unready.Swap(true) {
					log.Warn().Err(err).Msg("not ready: the readiness probe answers 503")
				}
				probeAnswer(w, nethttp.StatusServiceUnavailable, `{"status":"not_ready"}`)
				return
			}
			if unready.Swap(false) {
				log.Info().Msg("ready again")
			}
			probeAnswer(w, nethttp.StatusOK, `{"status":"ready"}`)
			return
		default:
			w.WriteHeader(nethttp.StatusNotFound)
			return
		}
		if tok := token(); tok != "" {
			bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(bearer), []byte(tok)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				w.WriteHeader(nethttp.StatusUnauthorized)
				return
			}
		} else if beyond {
			// METRICS_TOKEN was removed after start: nobody is let in.
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			w.WriteHeader(nethttp.StatusUnauthorized)
			return
		} else if !localHost(r.Host) {
			w.WriteHeader(nethttp.StatusForbidden)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		metrics.ServeHTTP(w, r)
	})
	return &MetricsServer{ln: ln, srv: serveSmall(ln, h, metricsReadTimeout, metricsWriteTimeout, log, "metrics listener stopped")}
}

// serveSmall serves h on ln with a small listener's bounds (headers of
// 8 KiB, the read and write timeouts given) until the server is shut
// down, logging why it stopped otherwise.
func serveSmall(ln net.Listener, h nethttp.Handler, read, write time.Duration, log zerolog.Logger, stopped string) *nethttp.Server {
	srv := &nethttp.Server{
		Handler:           h,
		ReadHeaderTimeout: read,
		ReadTimeout:       read,
		WriteTimeout:      write,
		IdleTimeout:       metricsIdleTimeout,
		MaxHeaderBytes:    8 << 10,
		// Malformed requests from clients are theirs to see, not the log's.
		ErrorLog: stdlog.New(io.Discard, "", 0),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			log.Error().Err(err).Str("listen", ln.Addr().String()).Msg(stopped)
		}
	}()
	return srv
}

// probeAnswer writes a probe's answer.
func probeAnswer(w nethttp.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body+"\n")
}

// Addr is the address the listener is bound to.
func (s *MetricsServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting scrapes and waits for those in flight (until ctx
// is done).
func (s *MetricsServer) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// ListensBeyondLoopback reports whether a listener bound to addr can be
// reached from other machines: any address but a loopback one (an
// unspecified address, 0.0.0.0 or [::], listens on every interface).
func ListensBeyondLoopback(addr net.Addr) bool {
	if t, ok := addr.(*net.TCPAddr); ok {
		return !t.IP.IsLoopback()
	}
	return true
}

// localHost reports whether a Host header names an IP address or
// localhost, which no DNS answer can rebind.
func localHost(hostport string) bool {
	host := strings.ToLower((&url.URL{Host: hostport}).Hostname())
	host = strings.TrimSuffix(host, ".")
	return net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost")
}
