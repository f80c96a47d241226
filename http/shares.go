package http

import (
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// CollabDeps are the dependencies of sharing, comments and annotations.
type CollabDeps struct {
	Files       docflow.FileStore
	Shares      docflow.ShareStore
	Comments    docflow.CommentStore
	Annotations docflow.AnnotationStore
}

// MountCollab registers the sharing, comment and annotation routes of a
// file. Each asks docflow.Authorize (through fileFor) for the right
// of the share role table (docs/api.md, "Working together") it exercises:
// view to read, comment to write a
// comment or annotation, share to manage shares.
func (s *Server) MountCollab(d CollabDeps) {
	if d.Files == nil || d.Shares == nil || d.Comments == nil || d.Annotations == nil {
		panic("http: MountCollab needs Files, Shares, Comments and Annotations")
	}
	h := &collabHandlers{s: s, d: d}
	s.collab = h
	b := Route{Auth: AuthUser, Limit: LimitDefault}
	s.Handle("GET", "/api/files/{file_id}/shares", b, h.listShares, docListShares)
	s.Handle("POST", "/api/files/{file_id}/shares", b, h.createShare, docCreateShare)
	s.Handle("PUT", "/api/files/{file_id}/shares/{share_id}", b, h.updateShare, docUpdateShare)
	s.Handle("DELETE", "/api/files/{file_id}/shares/{share_id}", b, h.deleteShare, docDeleteShare)
	s.Handle("GET", "/api/files/{file_id}/shared-with", b, h.sharedWith, docSharedWith)

	s.Handle("GET", "/api/files/{file_id}/comments", b, h.listComments, docListComments)
	s.Handle("POST", "/api/files/{file_id}/comments", b, h.createComment, docCreateComment)
	s.Handle("PUT", "/api/files/{file_id}/comments/{comment_id}", b, h.updateComment, docUpdateComment)
	s.Handle("DELETE", "/api/files/{file_id}/comments/{comment_id}", b, h.deleteComment, docDeleteComment)
	s.Handle("PATCH", "/api/files/{file_id}/comments/{comment_id}/resolve", b, h.resolveComment, docResolveComment)

	s.Handle("GET", "/api/files/{file_id}/annotations", b, h.listAnnotations, docListAnnotations)
	s.Handle("POST", "/api/files/{file_id}/annotations", b, h.createAnnotation, docCreateAnnotation)
	s.Handle("PUT", "/api/files/{file_id}/annotations/{annotation_id}", b, h.updateAnnotation, docUpdateAnnotation)
	s.Handle("DELETE", "/api/files/{file_id}/annotations/{annotation_id}", b, h.deleteAnnotation, docDeleteAnnotation)
}

type collabHandlers struct {
	s *Server
	d CollabDeps
}

// actor is the id comments and annotations are written under: the current
// user's, or in single-user mode the local admin's (the anonymous single
// user has no id of its own).
func (h *collabHandlers) actor(c *fasthttp.RequestCtx) string {
	if u := CurrentUser(c); u != nil && u.ID != "" {
		return u.ID
	}
	return docflow.AdminUserID(h.s.cfg.Settings)
}

func shareRoleArg(role *string, dflt string) (string, error) {
	if role == nil {
		if dflt == "" {
			return "", invalid("role", "role is required (viewer or editor)")
		}
		return dflt, nil
	}
	r := strings.ToLower(strings.TrimSpace(*role))
	if !docflow.ValidShareRole(r) {
		return "", invalid("role", "role must be viewer or editor")
	}
	return r, nil
}

// shareWrite checks what every change of shares needs: multi-user mode
// (400 outside it, as claims) and the share right on the file.
func (h *collabHandlers) shareWrite(c *fasthttp.RequestCtx) (*docflow.File, error) {
	if !h.s.multiUser() {
		return nil, errMultiUserOff
	}
	id, err := pathID(c, "file_id")
	if err != nil {
		return nil, err
	}
	return h.shareWriteOn(c, id)
}

// shareWriteOn is shareWrite for the file id.
func (h *collabHandlers) shareWriteOn(c *fasthttp.RequestCtx, id int64) (*docflow.File, error) {
	if !h.s.multiUser() {
		return nil, errMultiUserOff
	}
	return h.s.fileByID(c, h.d.Files, id, docflow.AccessShare)
}

func (h *collabHandlers) auditShare(c *fasthttp.RequestCtx, action string, sh *docflow.Share, how string) {
	h.s.audit(c, docflow.AuditEntry{Action: action, Target: fmt.Sprintf("share:%d", sh.ID),
		Detail: fmt.Sprintf("file %d shared with %s as %s%s", sh.FileID, sh.SharedWithUserID, sh.Role, how)})
}

func (h *collabHandlers) listShares(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessShare)
	if err != nil {
		return err
	}
	shares, err := h.d.Shares.ListShares(RequestContext(c), f.ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, shares)
	return nil
}

func (h *collabHandlers) createShare(c *fasthttp.RequestCtx) error {
	var req shareCreate
	f, err := h.shareWrite(c)
	if err != nil {
		return err
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	sh, err := h.shareFile(c, f, req.SharedWithUserID, req.Role)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, sh)
	return nil
}

// shareFile shares f, whose share right shareWrite checked, with userID
// as role (viewer when nil), or gives an existing share that role, and
// audits it (also the GraphQL mutation share's way).
func (h *collabHandlers) shareFile(c *fasthttp.RequestCtx, f *docflow.File, userID, roleArg *string) (*docflow.Share, error) {
	if userID == nil {
		return nil, invalid("shared_with_user_id", "shared_with_user_id is required")
	}
	target, err := docflow.CheckShareTarget(*userID, h.actor(c), f.OwnerID)
	if err != nil {
		return nil, err
	}
	role, err := shareRoleArg(roleArg, docflow.RoleViewer)
	if err != nil {
		return nil, err
	}
	if f.OwnerID == nil {
		return nil, docflow.Errorf(docflow.EBADREQUEST, "The file has no owner: claim it or assign an owner before sharing it")
	}
	sh, created, err := h.d.Shares.PutShare(RequestContext(c), f.ID, *f.OwnerID, target, role)
	if err != nil {
		return nil, err
	}
	action := docflow.AuditShareCreate
	if !created {
		action = docflow.AuditShareUpdate
	}
	h.auditShare(c, action, sh, "")
	return sh, nil
}

func (h *collabHandlers) updateShare(c *fasthttp.RequestCtx) error {
	var req shareUpdate
	shareID, err := pathID(c, "share_id")
	if err != nil {
		return err
	}
	f, err := h.shareWrite(c)
	if err != nil {
		return err
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	role, err := shareRoleArg(req.Role, "")
	if err != nil {
		return err
	}
	sh, err := h.d.Shares.UpdateShare(RequestContext(c), f.ID, shareID, role)
	if err != nil {
		return err
	}
	h.auditShare(c, docflow.AuditShareUpdate, sh, "")
	writeJSON(c, fasthttp.StatusOK, sh)
	return nil
}

func (h *collabHandlers) deleteShare(c *fasthttp.RequestCtx) error {
	shareID, err := pathID(c, "share_id")
	if err != nil {
		return err
	}
	f, err := h.shareWrite(c)
	if err != nil {
		return err
	}
	sh, err := h.d.Shares.DeleteShare(RequestContext(c), f.ID, shareID)
	if err != nil {
		return err
	}
	h.auditShare(c, docflow.AuditShareDelete, sh, "")
	writeJSON(c, fasthttp.StatusOK, statusMessage{Status: "success",
		Message: "Share removed: " + sh.SharedWithUserID + " no longer has access"})
	return nil
}

func (h *collabHandlers) sharedWith(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
	if err != nil {
		return err
	}
	out, err := h.d.Shares.SharedWith(RequestContext(c), f.ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}
