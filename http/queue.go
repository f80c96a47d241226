package http

import (
	"github.com/valyala/fasthttp"

	"docflow"
)

// QueueDeps is what the queue endpoints need.
type QueueDeps struct {
	// Queue answers them (actors/pipeline.Inspector: consumer lag from the
	// broker, workers and files from Postgres).
	Queue docflow.QueueService
}

// MountQueue registers GET /api/queue/stats and /api/queue/pending-count.
func (s *Server) MountQueue(d QueueDeps) {
	if d.Queue == nil {
		panic("http: MountQueue needs Queue")
	}
	h := &queueHandlers{d: d}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/queue/stats", b, h.stats, docQueueStats)
	s.Handle("GET", "/api/queue/pending-count", b, h.pendingCount, docPendingCount)
}

type queueHandlers struct {
	d QueueDeps
}

func (h *queueHandlers) stats(c *fasthttp.RequestCtx) error {
	st, err := h.d.Queue.QueueStats(RequestContext(c))
	if err != nil {
		return err
	}
	if st.Queues == nil {
		st.Queues = map[string]int64{}
	}
	if st.Workers.Active == nil {
		st.Workers.Active = []docflow.ActiveTask{}
	}
	if st.DBSummary.RecentProcessing == nil {
		st.DBSummary.RecentProcessing = []docflow.RecentProcessing{}
	}
	writeJSON(c, fasthttp.StatusOK, st)
	return nil
}

func (h *queueHandlers) pendingCount(c *fasthttp.RequestCtx) error {
	n, err := h.d.Queue.PendingCount(RequestContext(c))
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, pendingCount{TotalPending: n})
	return nil
}
