package app

import (
	"fmt"
	"net"

	"docflow"
	"docflow/actors/pipeline"
	"docflow/analytics/prom"
	dfhttp "docflow/http"
)

// startWorkerMetrics serves the Prometheus series of a worker, which has
// no HTTP API to carry GET /metrics, on WORKER_METRICS_ADDR when set: the
// step attempts and durations it records, the consumer lag it sees and its
// process resources. METRICS_TOKEN, when set, is asked of the scraper as on
// the API; beyond loopback it must be set, or the worker refuses to start.
// The same listener answers the liveness and readiness probes.
func (m *App) startWorkerMetrics() error {
	addr := docflow.WorkerMetricsAddr.Get(m.Settings)
	if m.Role != "worker" || addr == "" {
		return nil
	}
	if len(m.Brokers) > 0 {
		insp := pipeline.NewInspector(m.Brokers, m.Runs, docflow.StandardSteps)
		m.Prom.MustRegister(prom.LagCollector(insp.Lags))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on WORKER_METRICS_ADDR=%s: %w (is another worker on this host using it?)", addr, err)
	}
	if dfhttp.ListensBeyondLoopback(ln.Addr()) && docflow.MetricsToken.Get(m.Settings) == "" {
		ln.Close()
		return fmt.Errorf("WORKER_METRICS_ADDR=%s listens beyond loopback (on %s) and METRICS_TOKEN is empty: anyone who reaches it would read this worker's metrics; "+
			"set METRICS_TOKEN (at least 24 characters, sent by the scraper as a bearer token), or listen on 127.0.0.1", addr, ln.Addr())
	}
	// Ready while the database answers: without it a worker can claim and
	// record nothing (the API's readiness has the same critical check).
	srv := dfhttp.ServeMetrics(ln, m.Prom.Registry(), func() string { return docflow.MetricsToken.Get(m.Settings) }, m.DB.Ping, m.Log)
	m.MetricsServer = srv
	m.onClose("metrics listener", srv.Close)
	m.Log.Info().Str("listen", ln.Addr().String()).Msg("worker metrics on GET /metrics")
	return nil
}

// startProfiles serves Go's runtime profiles of this process (any role)
// on DEBUG_PPROF_ADDR when set, which must be a loopback address: a
// process refuses to start rather than show its internals to the network.
func (m *App) startProfiles() error {
	addr := docflow.DebugPprofAddr.Get(m.Settings)
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on DEBUG_PPROF_ADDR=%s: %w (is another process on this host using it?)", addr, err)
	}
	srv, err := dfhttp.ServeProfiles(ln, m.Log)
	if err != nil {
		ln.Close()
		return fmt.Errorf("DEBUG_PPROF_ADDR=%s listens beyond loopback (on %s): %w; profiles show the process's internals, so listen on 127.0.0.1", addr, ln.Addr(), err)
	}
	m.ProfileServer = srv
	m.onClose("profile listener", srv.Close)
	m.Log.Info().Str("listen", ln.Addr().String()).Msg("runtime profiles on GET /debug/pprof/")
	return nil
}
