package docflow

import (
	"strings"
	"testing"
)

// TestAuthorize walks the spec's share role table (interface.md, Share:
// owner, editor, viewer × view, comment/annotate, edit metadata, delete,
// share) plus the rules around it: administrators, users without a share,
// unclaimed files (decisions: visible to everyone, changed by admins only)
// and claims.
func TestAuthorize(t *testing.T) {
	alice := "alice"
	owned := &File{ID: 1, OwnerID: &alice}
	unclaimed := &File{ID: 2}
	user := func(id string) *User { return &User{ID: id} }
	admin := &User{ID: "root", IsAdmin: true}
	anon := &User{Anonymous: true, IsAdmin: true}

	needs := []Access{AccessView, AccessComment, AccessEdit, AccessDelete, AccessShare, AccessClaim}
	// Each want holds one outcome per need, in the order of needs:
	// + allowed, F forbidden (403), N not found (404), U unauthorized (401).
	for _, tc := range []struct {
		name  string
		u     *User
		f     *File
		role  string
		wants string
	}{
		// The spec's table, row by row; a file one owns is claimed already,
		// which changes nothing and is allowed.
		{"owner", user("alice"), owned, "", "+++++" + "+"},
		{"editor", user("bob"), owned, RoleEditor, "+++FF" + "F"},
		{"viewer", user("bob"), owned, RoleViewer, "+FFFF" + "F"},
		// Outside the table.
		{"no share", user("bob"), owned, "", "FFFFF" + "F"},
		{"unknown role", user("bob"), owned, "commenter", "FFFFF" + "F"},
		{"admin", admin, owned, "", "+++++" + "F"},
		{"admin with a share", admin, owned, RoleViewer, "+++++" + "F"},
		// A share with oneself changes nothing for the owner.
		{"owner with a share", user("alice"), owned, RoleViewer, "+++++" + "+"},
		{"unclaimed, user", user("bob"), unclaimed, "", "+FFFF" + "+"},
		{"unclaimed, admin", admin, unclaimed, "", "+++++" + "+"},
		{"unclaimed, anonymous admin", anon, unclaimed, "", "+++++" + "U"},
		{"unclaimed, user without id", user(""), unclaimed, "", "+FFFF" + "U"},
		{"no user", nil, owned, "", "UUUUU" + "U"},
		{"no file", user("alice"), nil, "", "NNNNN" + "N"},
	} {
		for i, need := range needs {
			want := tc.wants[i]
			err := Authorize(tc.u, tc.f, tc.role, need)
			got := map[string]byte{"": '+', EFORBIDDEN: 'F', ENOTFOUND: 'N', EUNAUTHORIZED: 'U'}[ErrorCode(err)]
			if got != want {
				t.Errorf("%s, %s: got %q (%v), want %q", tc.name, need, got, err, want)
			}
			if err != nil && strings.TrimSpace(ErrorMessage(err)) == "" {
				t.Errorf("%s, %s: error without a message", tc.name, need)
			}
			// The share role is worth looking up exactly when it can
			// change the answer.
			if tc.u != nil && tc.f != nil && !NeedsShareRole(tc.u, tc.f, need) {
				for _, role := range []string{"", RoleViewer, RoleEditor} {
					if other := Authorize(tc.u, tc.f, role, need); ErrorCode(other) != ErrorCode(err) {
						t.Errorf("%s, %s: role %q changes the answer, but NeedsShareRole is false", tc.name, need, role)
					}
				}
			}
		}
	}
}

func TestNeedsShareRole(t *testing.T) {
	alice := "alice"
	owned := &File{ID: 1, OwnerID: &alice}
	bob := &User{ID: "bob"}
	for need, want := range map[Access]bool{AccessView: true, AccessComment: true, AccessEdit: true,
		AccessDelete: false, AccessShare: false, AccessClaim: false} {
		if got := NeedsShareRole(bob, owned, need); got != want {
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
		if NeedsShareRole(tc.u, tc.f, AccessView) {
			t.Errorf("%s: the share role cannot change the answer", name)
		}
	}
}

func TestAccessString(t *testing.T) {
	for a, want := range map[Access]string{AccessView: "view", AccessShare: "share", AccessClaim: "claim", 0: "unknown", 99: "unknown"} {
		if got := a.String(); got != want {
			t.Errorf("%d: %q, want %q", int(a), got, want)
		}
	}
}
