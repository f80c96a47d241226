package http

import (
	"bytes"
	nethttp "net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"

	"docflow"
)

// MetricsDeps is what GET /metrics needs.
type MetricsDeps struct {
	// Gatherer collects the series to export (analytics/prom's registry).
	Gatherer prometheus.Gatherer
}

// MountMetrics registers GET /metrics: the Prometheus exposition of the
// core series. It answers the METRICS_TOKEN as a bearer token, or an
// administrator when that setting is empty (AuthMetrics).
func (s *Server) MountMetrics(d MetricsDeps) {
	if d.Gatherer == nil {
		panic("http: MountMetrics needs Gatherer")
	}
	h := &metricsHandlers{s: s, d: d}
	s.Handle("GET", "/metrics", Route{Auth: AuthMetrics, Limit: LimitNone}, h.metrics, docMetrics)
}

type metricsHandlers struct {
	s *Server
	d MetricsDeps
}

func (h *metricsHandlers) metrics(c *fasthttp.RequestCtx) error {
	mfs, err := h.d.Gatherer.Gather()
	if err != nil && len(mfs) == 0 {
		return docflow.Errorf(docflow.EUNAVAILABLE, "Metrics could not be gathered")
	}
	if err != nil {
		// Some collector failed: export what was gathered, as promhttp's
		// ContinueOnError does, and say so in the log.
		h.s.log.Warn().Err(err).Msg("metrics: some series could not be gathered")
	}
	accept := nethttp.Header{}
	accept.Set("Accept", string(c.Request.Header.Peek("Accept")))
	format := expfmt.Negotiate(accept)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	c.Response.Header.SetContentType(string(format))
	c.Response.Header.Set("Cache-Control", "no-store")
	c.SetStatusCode(fasthttp.StatusOK)
	c.SetBody(buf.Bytes())
	return nil
}
