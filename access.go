package docflow

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

// roleGrants is the spec's role table for the share roles; the owner may
// do everything.
var roleGrants = map[string][]Access{
	RoleViewer: {AccessView},
	RoleEditor: {AccessView, AccessComment, AccessEdit},
}

// Authorize decides whether u may do need with f, given shareRole, the role
// a share gives u on f ("" when there is none). It is the one statement of
// the file access rules in multi-user mode; outside it files have no owner
// that restricts anyone, and callers do not ask.
//
// The rules: administrators may do everything but claim a file someone
// owns (they reassign it with assign-owner); the owner may do everything;
// a share grants what its role's row of the spec's table grants; an
// unclaimed file may be viewed by anyone (that is how a user finds a file
// to claim) and claimed by any identified user, and all else on it is for
// administrators.
//
// Errors: ENOTFOUND for a nil file; EUNAUTHORIZED for a nil or anonymous
// user; EFORBIDDEN otherwise, also when u may not even view f, as the spec
// answers a document owned by another user with 403.
//
// Listings cannot ask per file: they filter by the same rule in their
// query (FileFilter.VisibleTo, SearchQuery.VisibleTo: owned or shared).
func Authorize(u *User, f *File, shareRole string, need Access) error {
	if f == nil {
		return Errorf(ENOTFOUND, "File not found")
	}
	if u == nil || (need == AccessClaim && (u.Anonymous || u.ID == "")) {
		return Errorf(EUNAUTHORIZED, "Authentication required")
	}
	owned := f.OwnerID != nil
	mine := owned && *f.OwnerID == u.ID
	if need == AccessClaim {
		// Claiming a file one owns already changes nothing: allowed, the
		// caller reports it. Administrators are no exception here.
		if owned && !mine {
			return ownedByAnother()
		}
		return nil
	}
	if u.IsAdmin || mine {
		return nil
	}
	if !owned {
		if need == AccessView {
			return nil
		}
		return Errorf(EFORBIDDEN, "Not the file owner")
	}
	grants, shared := roleGrants[shareRole]
	for _, a := range grants {
		if a == need {
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
func NeedsShareRole(u *User, f *File, need Access) bool {
	if u == nil || f == nil || u.IsAdmin || f.OwnerID == nil || *f.OwnerID == u.ID {
		return false
	}
	for _, grants := range roleGrants {
		for _, a := range grants {
			if a == need {
				return true
			}
		}
	}
	return false
}
