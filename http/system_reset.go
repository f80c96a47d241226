package http

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// SystemResetDeps is what the system reset routes need.
type SystemResetDeps struct {
	Resetter docflow.SystemResetter
}

// MountSystemReset registers the spec's system reset (administrators
// only): GET /api/admin/system-reset/status, POST …/full (confirmation
// DELETE) and POST …/reimport (confirmation REIMPORT). The two resets
// answer 403 while ENABLE_FACTORY_RESET is off and 422 for any other
// confirmation, before anything is touched; the audit entry is written
// after the wipe, so it is the first row of the new audit log.
func (s *Server) MountSystemReset(d SystemResetDeps) {
	if d.Resetter == nil {
		panic("http: MountSystemReset needs a Resetter")
	}
	h := &resetHandlers{s: s, d: d}
	s.Handle("GET", "/api/admin/system-reset/status", Route{Auth: AuthAdmin}, h.status, docResetStatus)
	// A reset waits for the tables' locks and sweeps the blob store: it
	// may take minutes on a large installation.
	opts := Route{Auth: AuthAdmin, Timeout: 30 * time.Minute}
	s.Handle("POST", "/api/admin/system-reset/full", opts, h.full, docResetFull)
	s.Handle("POST", "/api/admin/system-reset/reimport", opts, h.reimport, docResetReimport)
}

type resetHandlers struct {
	s *Server
	d SystemResetDeps
}

func (h *resetHandlers) status(c *fasthttp.RequestCtx) error {
	st := h.s.cfg.Settings
	writeJSON(c, fasthttp.StatusOK, resetStatus{
		Enabled:               docflow.EnableFactoryReset.Get(st),
		FactoryResetOnStartup: docflow.FactoryResetOnStartup.Get(st),
	})
	return nil
}

func (h *resetHandlers) full(c *fasthttp.RequestCtx) error { return h.reset(c, docflow.ResetFull) }

func (h *resetHandlers) reimport(c *fasthttp.RequestCtx) error {
	return h.reset(c, docflow.ResetReimport)
}

func (h *resetHandlers) reset(c *fasthttp.RequestCtx, mode string) error {
	if !docflow.EnableFactoryReset.Get(h.s.cfg.Settings) {
		return docflow.Errorf(docflow.EFORBIDDEN, "System reset is disabled: set ENABLE_FACTORY_RESET=true to allow it")
	}
	var in struct {
		Confirmation *string `json:"confirmation"`
	}
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	want := docflow.ResetConfirmation[mode]
	if in.Confirmation == nil || *in.Confirmation != want {
		return invalid("confirmation", "confirmation must be exactly %s: this wipes every document, user and setting made through docflow", want)
	}
	actor := "admin"
	if u := CurrentUser(c); u != nil && u.ID != "" {
		actor = u.ID
	}
	res, err := h.d.Resetter.Reset(RequestContext(c), mode, actor)
	if err != nil {
		return err
	}
	var rows int64
	for _, n := range res.Database {
		rows += n
	}
	detail := fmt.Sprintf("reset %s: %d rows from %d tables, %d files and %d folders removed",
		res.ID, rows, len(res.Database), res.Filesystem.DeletedFiles, res.Filesystem.DeletedDirs)
	if res.Reimport != nil {
		detail += fmt.Sprintf(", %d originals moved to %s", res.Reimport.FilesMoved, res.Reimport.ReimportFolder)
	}
	h.s.audit(c, docflow.AuditEntry{Action: "system.reset", Target: mode, Detail: detail})
	writeJSON(c, fasthttp.StatusOK, resetDone{Status: "success", Result: res})
	return nil
}
