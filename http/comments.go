package http

import (
	"fmt"

	"github.com/valyala/fasthttp"

	"docflow"
)

// Comments: any user who may view a file reads its comments; the owner,
// editors and administrators write them (the role table's
// comment/annotate right) and resolve or reopen any comment of the file;
// only a comment's author edits or deletes it, and still needs the
// comment right on the file.

func (h *collabHandlers) listComments(c *fasthttp.RequestCtx) error {
	f, err := h.file(c, docflow.AccessView)
	if err != nil {
		return err
	}
	flat, err := h.d.Comments.ListComments(RequestContext(c), f.ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, map[string]any{"file_id": f.ID, "comments": docflow.ThreadComments(flat), "total": len(flat)})
	return nil
}

func commentBody(body *string) (string, error) {
	if body == nil {
		return "", invalid("body", "body is required")
	}
	if err := docflow.CheckCommentBody(*body); err != nil {
		return "", err
	}
	return *body, nil
}

// auditGrants records the viewer shares a comment's mentions granted.
func (h *collabHandlers) auditGrants(c *fasthttp.RequestCtx, commentID int64, grants []*docflow.Share) {
	for _, sh := range grants {
		h.auditShare(c, docflow.AuditShareCreate, sh, fmt.Sprintf(" (mentioned in comment %d)", commentID))
	}
}

func (h *collabHandlers) createComment(c *fasthttp.RequestCtx) error {
	f, err := h.file(c, docflow.AccessComment)
	if err != nil {
		return err
	}
	var req struct {
		Body     *string `json:"body"`
		ParentID *int64  `json:"parent_id"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	body, err := commentBody(req.Body)
	if err != nil {
		return err
	}
	if req.ParentID != nil && *req.ParentID <= 0 {
		return invalid("parent_id", "parent_id must be a comment of this file")
	}
	cm := &docflow.Comment{FileID: f.ID, UserID: h.actor(c), ParentID: req.ParentID, Body: body}
	grants, err := h.d.Comments.CreateComment(RequestContext(c), cm, docflow.ExtractMentions(body), h.s.multiUser())
	if err != nil {
		return err
	}
	h.auditGrants(c, cm.ID, grants)
	writeJSON(c, fasthttp.StatusCreated, cm)
	return nil
}

// ownComment finds the path's comment of f and checks the current user
// wrote it: 404 unknown (or of another file), 403 another's.
func (h *collabHandlers) ownComment(c *fasthttp.RequestCtx, f *docflow.File) (*docflow.Comment, error) {
	id, err := pathID(c, "comment_id")
	if err != nil {
		return nil, err
	}
	cm, err := h.d.Comments.FindComment(RequestContext(c), f.ID, id)
	if err != nil {
		return nil, err
	}
	if cm.UserID != h.actor(c) {
		return nil, docflow.Errorf(docflow.EFORBIDDEN, "Only the author of a comment may change it")
	}
	return cm, nil
}

func (h *collabHandlers) updateComment(c *fasthttp.RequestCtx) error {
	f, err := h.file(c, docflow.AccessComment)
	if err != nil {
		return err
	}
	cm, err := h.ownComment(c, f)
	if err != nil {
		return err
	}
	var req struct {
		Body *string `json:"body"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	body, err := commentBody(req.Body)
	if err != nil {
		return err
	}
	updated, grants, err := h.d.Comments.UpdateComment(RequestContext(c), f.ID, cm.ID, body, docflow.ExtractMentions(body), h.s.multiUser())
	if err != nil {
		return err
	}
	h.auditGrants(c, cm.ID, grants)
	writeJSON(c, fasthttp.StatusOK, updated)
	return nil
}

func (h *collabHandlers) deleteComment(c *fasthttp.RequestCtx) error {
	f, err := h.file(c, docflow.AccessComment)
	if err != nil {
		return err
	}
	cm, err := h.ownComment(c, f)
	if err != nil {
		return err
	}
	if err := h.d.Comments.DeleteComment(RequestContext(c), f.ID, cm.ID); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h *collabHandlers) resolveComment(c *fasthttp.RequestCtx) error {
	f, err := h.file(c, docflow.AccessComment)
	if err != nil {
		return err
	}
	id, err := pathID(c, "comment_id")
	if err != nil {
		return err
	}
	var req struct {
		IsResolved *bool `json:"is_resolved"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.IsResolved == nil {
		return invalid("is_resolved", "is_resolved is required (true or false)")
	}
	cm, err := h.d.Comments.ResolveComment(RequestContext(c), f.ID, id, *req.IsResolved)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, cm)
	return nil
}
