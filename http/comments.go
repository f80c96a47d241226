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
// comment right on the file. What a comment's @mentions do is the file
// access rule's (docflow.FileAccess.Mentions): the owner's and
// administrators' give viewer access for as long as the comment mentions
// the user; anyone else's reach only users who may see the file already,
// and the answer lists the others as not_notified.

// commentAnswer is a written comment with the mentioned users its
// mentions did not reach.
type commentAnswer struct {
	*docflow.Comment
	NotNotified []string `json:"not_notified"`
}

func (h *collabHandlers) listComments(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
	if err != nil {
		return err
	}
	flat, err := h.d.Comments.ListComments(RequestContext(c), f.ID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, commentList{FileID: f.ID, Comments: docflow.ThreadComments(flat), Total: len(flat)})
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

// auditGrants records the viewer shares a comment's mentions granted and
// those that ended with it (edited or deleted).
func (h *collabHandlers) auditGrants(c *fasthttp.RequestCtx, commentID int64, g docflow.MentionGrants, why string) {
	for _, sh := range g.Granted {
		h.auditShare(c, docflow.AuditShareCreate, sh, fmt.Sprintf(" (mentioned in comment %d)", commentID))
	}
	for _, sh := range g.Ended {
		h.auditShare(c, docflow.AuditShareDelete, sh, fmt.Sprintf(" (mention grant ended: comment %d %s)", commentID, why))
	}
}

// mentions resolves the names body @mentions to users and decides, by the
// file access rule, whom the current user's comment on f notifies and
// grants access.
func (h *collabHandlers) mentions(c *fasthttp.RequestCtx, f *docflow.File, body string) (docflow.MentionReach, error) {
	ctx := RequestContext(c)
	users, err := h.d.Comments.ResolveMentions(ctx, f.ID, docflow.ExtractMentions(body))
	if err != nil {
		return docflow.MentionReach{}, err
	}
	for i := range users {
		users[i].IsAdmin = h.s.auth.isAdmin(ctx, users[i].ID)
	}
	return h.s.fileAccess().Mentions(CurrentUser(c), f, users), nil
}

func (h *collabHandlers) createComment(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	var req commentCreate
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ans, err := h.commentOn(c, f, req.Body, req.ParentID)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, ans)
	return nil
}

// commentOn writes the current user's comment on f, whose comment right
// the route checked: the body checked, its mentions resolved and granted
// by the file access rule, the grants audited (also the GraphQL mutation
// comment's way).
func (h *collabHandlers) commentOn(c *fasthttp.RequestCtx, f *docflow.File, bodyArg *string, parentID *int64) (commentAnswer, error) {
	body, err := commentBody(bodyArg)
	if err != nil {
		return commentAnswer{}, err
	}
	if parentID != nil && *parentID <= 0 {
		return commentAnswer{}, invalid("parent_id", "parent_id must be a comment of this file")
	}
	reach, err := h.mentions(c, f, body)
	if err != nil {
		return commentAnswer{}, err
	}
	cm := &docflow.Comment{FileID: f.ID, UserID: h.actor(c), ParentID: parentID, Body: body, Mentions: reach.Notified}
	granted, err := h.d.Comments.CreateComment(RequestContext(c), cm, reach.Grant)
	if err != nil {
		return commentAnswer{}, err
	}
	h.auditGrants(c, cm.ID, docflow.MentionGrants{Granted: granted}, "")
	return commentAnswer{cm, reach.NotNotified}, nil
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
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	cm, err := h.ownComment(c, f)
	if err != nil {
		return err
	}
	var req commentUpdate
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	body, err := commentBody(req.Body)
	if err != nil {
		return err
	}
	reach, err := h.mentions(c, f, body)
	if err != nil {
		return err
	}
	updated, g, err := h.d.Comments.UpdateComment(RequestContext(c), f.ID, cm.ID, body, reach.Notified, reach.Grant)
	if err != nil {
		return err
	}
	h.auditGrants(c, cm.ID, g, "no longer mentions the user")
	writeJSON(c, fasthttp.StatusOK, commentAnswer{updated, reach.NotNotified})
	return nil
}

func (h *collabHandlers) deleteComment(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	cm, err := h.ownComment(c, f)
	if err != nil {
		return err
	}
	ended, err := h.d.Comments.DeleteComment(RequestContext(c), f.ID, cm.ID)
	if err != nil {
		return err
	}
	h.auditGrants(c, cm.ID, docflow.MentionGrants{Ended: ended}, "deleted")
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h *collabHandlers) resolveComment(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessComment)
	if err != nil {
		return err
	}
	id, err := pathID(c, "comment_id")
	if err != nil {
		return err
	}
	var req commentResolve
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
