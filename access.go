package docflow

import "context"

// Access is what a request needs to do with a file. The levels follow the
// spec's share role table (interface.md, Share): view, comment/annotate,
// edit metadata, delete, share; claim is the ownership route's own.
type Access int

const (
	// AccessView reads a file: its record, metadata, logs, content,
	// similar documents, and who it is shared with.
	AccessView Access = iota + 1
	// AccessComment writes comments and annotations on a file.
	AccessComment
	// AccessEdit changes a file: its metadata and pipeline; reprocessing
	// and computing its embedding count as changes too.
	AccessEdit
	// AccessDelete deletes a file.
	AccessDelete
	// AccessShare lists, grants, changes and revokes a file's shares.
	AccessShare
	// AccessClaim makes the user the owner of an unclaimed file.
	AccessClaim
)

var accessNames = [...]string{AccessView: "view", AccessComment: "comment", AccessEdit: "edit",
	AccessDelete: "delete", AccessShare: "share", AccessClaim: "claim"}

func (a Access) String() string {
	if a > 0 && int(a) < len(accessNames) {
		return accessNames[a]
	}
	return "unknown"
}

// Share roles (Share.role).
const (
	RoleViewer = "viewer"
	RoleEditor = "editor"
)

// roleGrants is what each share role may do: a viewer views; an editor
// also comments and edits; the owner may do everything.
var roleGrants = map[string][]Access{
	RoleViewer: {AccessView},
	RoleEditor: {AccessView, AccessComment, AccessEdit},
}

// FileAccess is the file access rule of a service, the one statement of
// who may do what with a file. Every route that reaches one file asks
// Authorize; listings, search, similarity and the bulk routes, which
// cannot ask per file in their queries, filter by VisibleTo, which states
// the same view rule as a query filter. Build it with FileAccessFrom on
// each request: the settings behind it may change while the service runs.
type FileAccess struct {
	// MultiUser is MULTI_USER_ENABLED: files have owners who restrict what
	// others may do with them. Outside it (single-user mode) every request
	// may do everything with every file, and nothing can be claimed.
	MultiUser bool
	// UnclaimedVisible is UNCLAIMED_FILES_VISIBLE: every signed-in user
	// may see and claim a file without an owner (uploaded in single-user
	// mode, from a watch folder or processall). Otherwise such files are
	// for administrators alone.
	UnclaimedVisible bool
}

// FileAccessFrom reads the file access rule from the settings.
func FileAccessFrom(s SettingsReader) FileAccess {
	return FileAccess{
		MultiUser:        MultiUserEnabled.Get(s),
		UnclaimedVisible: UnclaimedFilesVisible.Get(s),
	}
}

// Authorize decides whether u may do need with f, given shareRole, the role
// a share gives u on f ("" when there is none).
//
// The rules, in multi-user mode: administrators may do everything but
// claim a file someone owns (they reassign it with assign-owner); the
// owner may do everything; a share grants what its role's row of the
// spec's table grants. A file without an owner is an administrator's to
// see, claim and change; with UnclaimedVisible any identified user may
// also see and claim it (changing it stays an administrator's). Outside
// multi-user mode everything is allowed but claiming.
//
// Errors: ENOTFOUND for a nil file; EBADREQUEST for a claim outside
// multi-user mode; EUNAUTHORIZED for a nil user, or a claim by an
// anonymous one; EFORBIDDEN otherwise. A file u may not even view answers
// EFORBIDDEN "Document is owned by another user", the answer for
// another user's document, whether or not it has an owner: nothing tells
// a user which files are unclaimed when they may not see them.
func (a FileAccess) Authorize(u *User, f *File, shareRole string, need Access) error {
	if f == nil {
		return Errorf(ENOTFOUND, "File not found")
	}
	if need == AccessClaim && !a.MultiUser {
		return Errorf(EBADREQUEST, "Multi-user mode is not enabled")
	}
	if (u == nil && a.MultiUser) || (need == AccessClaim && (u.Anonymous || u.ID == "")) {
		return Errorf(EUNAUTHORIZED, "Authentication required")
	}
	if !a.MultiUser {
		return nil
	}
	owned := f.OwnerID != nil
	mine := owned && u.ID != "" && *f.OwnerID == u.ID
	if need == AccessClaim {
		// Claiming a file one owns already changes nothing: allowed, the
		// caller reports it. Administrators are no exception here.
		if (owned && !mine) || (!owned && !u.IsAdmin && !a.UnclaimedVisible) {
			return ownedByAnother()
		}
		return nil
	}
	if u.IsAdmin || mine {
		return nil
	}
	if !owned {
		if !a.UnclaimedVisible {
			return ownedByAnother()
		}
		if need == AccessView {
			return nil
		}
		return Errorf(EFORBIDDEN, "Not the file owner")
	}
	grants, shared := roleGrants[shareRole]
	for _, g := range grants {
		if g == need {
			return nil
		}
	}
	if shared {
		return Errorf(EFORBIDDEN, "Your %s role on this file does not allow this (%s)", shareRole, need)
	}
	return ownedByAnother()
}

func ownedByAnother() error { return Errorf(EFORBIDDEN, "Document is owned by another user") }

// NeedsShareRole reports whether Authorize's answer for u, f and need
// depends on the role a share gives u: callers look the role up only then.
func (a FileAccess) NeedsShareRole(u *User, f *File, need Access) bool {
	if !a.MultiUser || u == nil || f == nil || u.IsAdmin || f.OwnerID == nil || *f.OwnerID == u.ID {
		return false
	}
	for _, grants := range roleGrants {
		for _, g := range grants {
			if g == need {
				return true
			}
		}
	}
	return false
}

// MayReadOwned reports whether u may read a record of owner, one of the
// records users keep beside the system's (pipelines, routing rules): a
// system record (nil owner) is everyone's to read, administrators read
// every record, others their own.
func MayReadOwned(u *User, owner *string) bool {
	return owner == nil || u.IsAdmin || (!u.Anonymous && u.ID != "" && *owner == u.ID)
}

// ShareRoleFinder finds the role a share gives a user on a file
// (FileStore.ShareRole).
type ShareRoleFinder interface {
	// ShareRole returns the role of userID's share of the file, "" for
	// none.
	ShareRole(ctx context.Context, fileID int64, userID string) (string, error)
}

// Check is Authorize with the share role looked up in roles, only when
// the answer depends on it (NeedsShareRole): what every transport asks
// before acting on one file.
func (a FileAccess) Check(ctx context.Context, roles ShareRoleFinder, u *User, f *File, need Access) error {
	role := ""
	if a.NeedsShareRole(u, f, need) {
		var err error
		if role, err = roles.ShareRole(ctx, f.ID, u.ID); err != nil {
			return err
		}
	}
	return a.Authorize(u, f, role, need)
}

// Visibility is the view rule of FileAccess as a query filter, for the
// listings, search and similarity queries that cannot ask Authorize per
// file: the files UserID owns, those shared with UserID, and with
// Unclaimed the files without an owner. A nil *Visibility means every
// file. An empty UserID owns nothing (an index's empty owner field is an
// unclaimed file's, never a user's), and no share is made with it.
type Visibility struct {
	UserID    string
	Unclaimed bool
}

// VisibleTo returns the files u may see as a query filter: nil (every
// file) outside multi-user mode and for administrators. For a nil user it
// is a filter that matches nothing.
func (a FileAccess) VisibleTo(u *User) *Visibility {
	if !a.MultiUser || (u != nil && u.IsAdmin) {
		return nil
	}
	if u == nil {
		return &Visibility{}
	}
	return &Visibility{UserID: u.ID, Unclaimed: a.UnclaimedVisible}
}

// Sees reports whether a file with owner ownerID (nil: unclaimed), on
// which a share gives the user shareRole, passes the filter: what each
// query implementation of the filter must select.
func (v *Visibility) Sees(ownerID *string, shareRole string) bool {
	switch {
	case v == nil:
		return true
	case ownerID == nil:
		return v.Unclaimed
	}
	return (v.UserID != "" && *ownerID == v.UserID) || ValidShareRole(shareRole)
}
