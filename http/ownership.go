package http

import (
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// OwnershipDeps are the dependencies of the ownership routes.
type OwnershipDeps struct {
	Files docflow.FileRepository
}

// MountOwnership registers claim, bulk-claim and assign-owner (multi-user
// mode).
func (s *Server) MountOwnership(d OwnershipDeps) {
	if d.Files == nil {
		panic("http: MountOwnership needs Files")
	}
	b := Route{Auth: AuthUser, Limit: LimitDefault}
	s.Handle("POST", "/api/files/{file_id}/claim", b, s.claim(d))
	s.Handle("POST", "/api/files/bulk-claim", b, s.bulkClaim(d))
	s.Handle("POST", "/api/files/assign-owner", Route{Auth: AuthAdmin, Limit: LimitDefault}, s.assignOwner(d))
}

var errMultiUserOff = docflow.Errorf(docflow.EBADREQUEST, "Multi-user mode is not enabled")

// claimant is the user who claims: 400 outside multi-user mode, 401
// without a real identity (the anonymous single user cannot own files).
func (s *Server) claimant(c *fasthttp.RequestCtx) (*docflow.User, error) {
	if !s.multiUser() {
		return nil, errMultiUserOff
	}
	u := CurrentUser(c)
	if u == nil || u.Anonymous || u.ID == "" {
		return nil, docflow.Errorf(docflow.EUNAUTHORIZED, "Authentication required")
	}
	return u, nil
}

func (s *Server) claim(d OwnershipDeps) Handler {
	return func(c *fasthttp.RequestCtx) error {
		u, err := s.claimant(c)
		if err != nil {
			return err
		}
		id, err := pathID(c, "file_id")
		if err != nil {
			return err
		}
		claimed, skipped, err := d.Files.ClaimFiles(RequestContext(c), u.ID, []int64{id})
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
		writeJSON(c, fasthttp.StatusOK, map[string]any{"status": "success", "message": msg, "file_id": id, "owner_id": u.ID})
		return nil
	}
}

func (s *Server) bulkClaim(d OwnershipDeps) Handler {
	return func(c *fasthttp.RequestCtx) error {
		u, err := s.claimant(c)
		if err != nil {
			return err
		}
		ids, err := bulkIDs(c)
		if err != nil {
			return err
		}
		claimed, skipped, err := d.Files.ClaimFiles(RequestContext(c), u.ID, ids)
		if err != nil {
			return err
		}
		writeJSON(c, fasthttp.StatusOK, map[string]any{"status": "success", "claimed_count": len(claimed),
			"claimed_ids": claimed, "skipped": skipped, "owner_id": u.ID})
		return nil
	}
}

func (s *Server) assignOwner(d OwnershipDeps) Handler {
	return func(c *fasthttp.RequestCtx) error {
		if !s.multiUser() {
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
		n, err := d.Files.AssignOwner(RequestContext(c), owner, ids)
		if err != nil {
			return err
		}
		msg := "Assigned all unclaimed files"
		if ids != nil {
			msg = "Assigned the listed files"
		}
		writeJSON(c, fasthttp.StatusOK, map[string]any{"status": "success", "message": msg, "updated_count": n, "owner_id": owner})
		return nil
	}
}
