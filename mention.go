package docflow

// Mentioned is a user an @mention of a comment names, with what the file
// access rule needs to know of them.
type Mentioned struct {
	ID      string
	IsAdmin bool
	// ShareRole is the role a share gives the user on the comment's file
	// ("" when there is none).
	ShareRole string
}

// MentionReach is what a comment's @mentions do.
type MentionReach struct {
	// Notified are the users the mentions reach, in the order given: those
	// who may see the file, and those Grant gives access. They are the
	// comment's mentions.
	Notified []string
	// Grant are the users who get, or keep, viewer access as this
	// comment's mention grant (a share the owner did not make); a user
	// who holds a share the owner made keeps it as it is.
	Grant []string
	// NotNotified are the other mentioned users: they may not see the
	// file, and the comment's author may not give them access.
	NotNotified []string
}

// Mentions decides what the @mentions of a comment by author on f do. A
// mention by
// someone who may share the file (AccessShare: its owner or an
// administrator) gives each mentioned user viewer access to an owned file,
// the way a share by the owner would; the access lasts while a comment
// whose mention granted it stays and still mentions the user, unless the
// owner shares the file with them meanwhile. Anyone else's mention
// reaches only the users who may already see the file; it never gives
// access.
func (a FileAccess) Mentions(author *User, f *File, users []Mentioned) MentionReach {
	r := MentionReach{Notified: []string{}, Grant: []string{}, NotNotified: []string{}}
	// No share role grants AccessShare: the author's is not needed.
	grants := a.MultiUser && f != nil && f.OwnerID != nil && a.Authorize(author, f, "", AccessShare) == nil
	for _, m := range users {
		u := &User{ID: m.ID, IsAdmin: m.IsAdmin}
		switch {
		case a.Authorize(u, f, m.ShareRole, AccessView) == nil:
			r.Notified = append(r.Notified, m.ID)
			// A share from an earlier mention is renewed by this one, so
			// that it lasts while any granting comment mentions the user.
			if grants && m.ShareRole == RoleViewer && !m.IsAdmin && m.ID != *f.OwnerID && m.ID != author.ID {
				r.Grant = append(r.Grant, m.ID)
			}
		case grants:
			r.Notified = append(r.Notified, m.ID)
			r.Grant = append(r.Grant, m.ID)
		default:
			r.NotNotified = append(r.NotNotified, m.ID)
		}
	}
	return r
}
