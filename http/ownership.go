package http

import (
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// OwnershipDeps are the dependencies of the ownership routes.
type OwnershipDeps struct {
	Files docflow.FileStore
}

// MountOwnership registers claim, bulk-claim and assign-owner (multi-user
// mode). Who may claim which file is the file access rule's
// (docflow.FileAccess: AccessClaim); every claim and owner change is
// audited.
func (s *Server) MountOwnership(d OwnershipDeps) {
	if d.Files == nil {
		panic("http: MountOwnership needs Files")
	}
	h := &ownershipHandlers{s: s, d: d}
	b := Route{Auth: AuthUser, Limit: LimitDefault}
	s.Handle("POST", "/api/files/{file_id}/claim", b, h.claim, docClaim)
	s.Handle("POST", "/api/files/bulk-claim", b, h.bulkClaim, docBulkClaim)
	s.Handle("POST", "/api/files/assign-owner", Route{Auth: AuthAdmin, Limit: LimitDefault}, h.assignOwner, docAssignOwner)
}

type ownershipHandlers struct {
	s *Server
	d OwnershipDeps
}

var errMultiUserOff = docflow.Errorf(docflow.EBADREQUEST, "Multi-user mode is not enabled")

func (h *ownershipHandlers) claim(c *fasthttp.RequestCtx) error {
	access, u := h.s.fileAccess(), CurrentUser(c)
	// 400 outside multi-user mode, 401 without a real identity, before
	// the path is looked at.
	if err := access.Authorize(u, &docflow.File{}, "", docflow.AccessClaim); docflow.ErrorCode(err) != docflow.EFORBIDDEN && err != nil {
		return err
	}
	id, err := pathID(c, "file_id")
	if err != nil {
		return err
	}
	claimed, skipped, err := h.d.Files.ClaimFiles(RequestContext(c), u, access, []int64{id})
	if err != nil {
		return err
	}
	msg := "File claimed"
	if len(claimed) == 0 && len(skipped) == 1 {
		switch skipped[0].Reason {
		case "not found":
			return docflow.Errorf(docflow.ENOTFOUND, "File not found")
		case "owned by another user":
			return docflow.Errorf(docflow.EFORBIDDEN, "Document is owned by another user")
		default:
			msg = "File already owned by you"
		}
	}
	if len(claimed) == 1 {
		h.s.auditFile(c, docflow.AuditFileClaim, id, fmt.Sprintf("file %d claimed; it had no owner", id))
	}
	writeJSON(c, fasthttp.StatusOK, map[string]any{"status": "success", "message": msg, "file_id": id, "owner_id": u.ID})
	return nil
}

func (h *ownershipHandlers) bulkClaim(c *fasthttp.RequestCtx) error {
	access, u := h.s.fileAccess(), CurrentUser(c)
	if err := access.Authorize(u, &docflow.File{}, "", docflow.AccessClaim); docflow.ErrorCode(err) != docflow.EFORBIDDEN && err != nil {
		return err
	}
	ids, err := bulkIDs(c)
	if err != nil {
		return err
	}
	claimed, skipped, err := h.d.Files.ClaimFiles(RequestContext(c), u, access, ids)
	if err != nil {
		return err
	}
	h.s.auditFiles(c, docflow.AuditFileClaim, "bulk-claim of files that had no owner", claimed)
	writeJSON(c, fasthttp.StatusOK, map[string]any{"status": "success", "claimed_count": len(claimed),
		"claimed_ids": claimed, "skipped": skipped, "owner_id": u.ID})
	return nil
}

func (h *ownershipHandlers) assignOwner(c *fasthttp.RequestCtx) error {
	if !h.s.multiUser() {
		return errMultiUserOff
	}
	owner := strings.TrimSpace(string(c.QueryArgs().Peek("owner_id")))
	if owner == "" {
		return invalid("owner_id", "owner_id is required")
	}
	var ids []int64
	if len(c.PostBody()) > 0 {
		var err error
		if ids, err = bulkIDs(c); err != nil {
			return err
		}
	}
	changes, err := h.d.Files.AssignOwner(RequestContext(c), owner, ids)
	if err != nil {
		return err
	}
	h.s.auditOwnerChanges(c, owner, changes)
	msg := "Assigned all unclaimed files"
	if ids != nil {
		msg = "Assigned the listed files"
	}
	writeJSON(c, fasthttp.StatusOK, map[string]any{"status": "success", "message": msg, "updated_count": len(changes), "owner_id": owner})
	return nil
}

// auditOwnerChanges records an assign-owner: the files that had no owner,
// then those taken from each former owner.
func (s *Server) auditOwnerChanges(c *fasthttp.RequestCtx, owner string, changes []docflow.OwnerChange) {
	var from []string
	byOwner := map[string][]int64{}
	for _, ch := range changes {
		k := ""
		if ch.From != nil {
			k = *ch.From
		}
		if _, ok := byOwner[k]; !ok {
			from = append(from, k)
		}
		byOwner[k] = append(byOwner[k], ch.FileID)
	}
	for _, k := range from {
		what := "assigned to " + owner + " files that had no owner"
		if k != "" {
			what = "assigned to " + owner + " files owned by " + k
		}
		s.auditFiles(c, docflow.AuditFileAssignOwner, what, byOwner[k])
	}
}
