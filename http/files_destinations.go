package http

import (
	"github.com/valyala/fasthttp"

	"docflow"
)

// sendTo is POST /api/files/{file_id}/send-to/{integration_id}: the
// document (processed, else original) is queued for delivery to one of
// the current user's active destination integrations, whatever its
// earlier deliveries there (it replaces what they stored). 202
// {status: queued}; 404 for a file the user may not see or an
// integration not theirs; 422 for an integration that is not an active
// destination.
func (h *filesHandlers) sendTo(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
	if err != nil {
		return err
	}
	id, err := pathID(c, "integration_id")
	if err != nil {
		return err
	}
	owner := h.s.tokenOwner(CurrentUser(c))
	if err := h.d.Destinations.SendFileTo(RequestContext(c), f.ID, owner, id); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusAccepted, sendQueued{Status: "queued", FileID: f.ID, IntegrationID: id})
	return nil
}
