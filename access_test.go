package docflow

import (
	"strings"
	"testing"
)

// TestAuthorize walks the share role table (docs/api.md, "Working
// together": owner, editor, viewer × view, comment/annotate, edit
// metadata, delete, share) plus the rules around it: administrators, users without a share,
// unclaimed files (administrators' alone, unless UNCLAIMED_FILES_VISIBLE
// lets every signed-in user see and claim them), claims, and single-user
// mode.
func TestAuthorize(t *testing.T) {
	alice := "alice"
	owned := &File{ID: 1, OwnerID: &alice}
	unclaimed := &File{ID: 2}
	user := func(id string) *User { return &User{ID: id} }
	admin := &User{ID: "root", IsAdmin: true}
	anon := &User{Anonymous: true, IsAdmin: true}
	multi, open, single := FileAccess{MultiUser: true}, FileAccess{MultiUser: true, UnclaimedVisible: true}, FileAccess{}

	needs := []Access{AccessView, AccessComment, AccessEdit, AccessDelete, AccessShare, AccessClaim}
	// Each want holds one outcome per need, in the order of needs:
	// + allowed, F forbidden (403), N not found (404), U unauthorized
	// (401), B bad request (400).
	for _, tc := range []struct {
		name  string
		a     FileAccess
		u     *User
		f     *File
		role  string
		wants string
	}{
		// The spec's table, row by row; a file one owns is claimed already,
		// which changes nothing and is allowed.
		{"owner", multi, user("alice"), owned, "", "+++++" + "+"},
		{"editor", multi, user("bob"), owned, RoleEditor, "+++FF" + "F"},
		{"viewer", multi, user("bob"), owned, RoleViewer, "+FFFF" + "F"},
		// Outside the table.
		{"no share", multi, user("bob"), owned, "", "FFFFF" + "F"},
		{"unknown role", multi, user("bob"), owned, "commenter", "FFFFF" + "F"},
		{"admin", multi, admin, owned, "", "+++++" + "F"},
		{"admin with a share", multi, admin, owned, RoleViewer, "+++++" + "F"},
		// A share with oneself changes nothing for the owner.
		{"owner with a share", multi, user("alice"), owned, RoleViewer, "+++++" + "+"},
		// Unclaimed files are administrators' ...
		{"unclaimed, user", multi, user("bob"), unclaimed, "", "FFFFF" + "F"},
		{"unclaimed, admin", multi, admin, unclaimed, "", "+++++" + "+"},
		{"unclaimed, anonymous admin", multi, anon, unclaimed, "", "+++++" + "U"},
		{"unclaimed, user without id", multi, user(""), unclaimed, "", "FFFFF" + "U"},
		// ... unless every signed-in user may see and claim them.
		{"visible unclaimed, user", open, user("bob"), unclaimed, "", "+FFFF" + "+"},
		{"visible unclaimed, admin", open, admin, unclaimed, "", "+++++" + "+"},
		{"visible unclaimed, user without id", open, user(""), unclaimed, "", "+FFFF" + "U"},
		{"visible unclaimed, another's file", open, user("bob"), owned, "", "FFFFF" + "F"},
		{"no user", multi, nil, owned, "", "UUUUU" + "U"},
		{"no file", multi, user("alice"), nil, "", "NNNNN" + "N"},
		// Single-user mode: no owner restricts anyone; nothing is claimed.
		{"single user, another's file", single, user("bob"), owned, "", "+++++" + "B"},
		{"single user, anonymous", single, anon, unclaimed, "", "+++++" + "B"},
		{"single user, no user", single, nil, unclaimed, "", "+++++" + "B"},
	} {
		for i, need := range needs {
			want := tc.wants[i]
			err := tc.a.Authorize(tc.u, tc.f, tc.role, need)
			got := map[string]byte{"": '+', EFORBIDDEN: 'F', ENOTFOUND: 'N', EUNAUTHORIZED: 'U', EBADREQUEST: 'B'}[ErrorCode(err)]
			if got != want {
				t.Errorf("%s, %s: got %q (%v), want %q", tc.name, need, got, err, want)
			}
			if err != nil && strings.TrimSpace(ErrorMessage(err)) == "" {
				t.Errorf("%s, %s: error without a message", tc.name, need)
			}
			// The share role is worth looking up exactly when it can
			// change the answer.
			if tc.u != nil && tc.f != nil && !tc.a.NeedsShareRole(tc.u, tc.f, need) {
				for _, role := range []string{"", RoleViewer, RoleEditor} {
					if other := tc.a.Authorize(tc.u, tc.f, role, need); ErrorCode(other) != ErrorCode(err) {
						t.Errorf("%s, %s: role %q changes the answer, but NeedsShareRole is false", tc.name, need, role)
					}
				}
			}
		}
	}
}

// TestUnseenFilesAnswerAlike: a user who may not see a file gets the same
// answer whether another user owns it or nobody does, so the answers do
// not tell which files are unclaimed.
func TestUnseenFilesAnswerAlike(t *testing.T) {
	alice := "alice"
	a := FileAccess{MultiUser: true}
	bob := &User{ID: "bob"}
	for _, need := range []Access{AccessView, AccessEdit, AccessDelete, AccessShare, AccessClaim} {
		theirs := a.Authorize(bob, &File{ID: 1, OwnerID: &alice}, "", need)
		nobodys := a.Authorize(bob, &File{ID: 2}, "", need)
		if ErrorCode(theirs) != ErrorCode(nobodys) || ErrorMessage(theirs) != ErrorMessage(nobodys) {
			t.Errorf("%s: another's file answers %v, an unclaimed one %v", need, theirs, nobodys)
		}
	}
}

// TestVisibilityIsTheViewRule: the query filter VisibleTo gives listings
// selects exactly the files Authorize lets the user view, for every mode,
// user, owner and share.
func TestVisibilityIsTheViewRule(t *testing.T) {
	alice, bob := "alice", "bob"
	users := []*User{nil, {ID: "alice"}, {ID: "bob"}, {ID: ""}, {ID: "root", IsAdmin: true}, {Anonymous: true, IsAdmin: true}}
	for _, a := range []FileAccess{{}, {MultiUser: true}, {MultiUser: true, UnclaimedVisible: true}, {UnclaimedVisible: true}} {
		for _, u := range users {
			v := a.VisibleTo(u)
			for _, owner := range []*string{nil, &alice, &bob} {
				for _, role := range []string{"", RoleViewer, RoleEditor} {
					f := &File{ID: 1, OwnerID: owner}
					allowed := a.Authorize(u, f, role, AccessView) == nil
					if u == nil && !a.MultiUser {
						continue // no request reaches a listing without a user
					}
					if (owner == nil || u == nil) && role != "" {
						continue // unclaimed files cannot be shared, nor files with nobody
					}
					if got := v.Sees(owner, role); got != allowed {
						t.Errorf("%+v, user %+v, owner %v, role %q: filter %v, Authorize %v", a, u, deref(owner), role, got, allowed)
					}
				}
			}
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return *s
}

func TestNeedsShareRole(t *testing.T) {
	alice := "alice"
	owned := &File{ID: 1, OwnerID: &alice}
	bob := &User{ID: "bob"}
	a := FileAccess{MultiUser: true}
	for need, want := range map[Access]bool{AccessView: true, AccessComment: true, AccessEdit: true,
		AccessDelete: false, AccessShare: false, AccessClaim: false} {
		if got := a.NeedsShareRole(bob, owned, need); got != want {
			t.Errorf("another user's file, %s: %v, want %v", need, got, want)
		}
	}
	for name, tc := range map[string]struct {
		u *User
		f *File
	}{
		"owner": {&User{ID: "alice"}, owned}, "admin": {&User{ID: "root", IsAdmin: true}, owned},
		"unclaimed": {bob, &File{ID: 2}}, "no user": {nil, owned}, "no file": {bob, nil},
	} {
		if a.NeedsShareRole(tc.u, tc.f, AccessView) {
			t.Errorf("%s: the share role cannot change the answer", name)
		}
	}
	if (FileAccess{}).NeedsShareRole(bob, owned, AccessView) {
		t.Error("single-user mode: the share role cannot change the answer")
	}
}

func TestAccessString(t *testing.T) {
	for a, want := range map[Access]string{AccessView: "view", AccessShare: "share", AccessClaim: "claim", 0: "unknown", 99: "unknown"} {
		if got := a.String(); got != want {
			t.Errorf("%d: %q, want %q", int(a), got, want)
		}
	}
}
