package docflow

import (
	"fmt"
	"testing"
)

// TestMentions: the owner's (and an administrator's) mentions give viewer
// access to owned files; anyone else's reach only who may already see
// the file, the others are not notified.
func TestMentions(t *testing.T) {
	olga := "olga"
	owned, unclaimed := &File{ID: 1, OwnerID: &olga}, &File{ID: 2}
	multi := FileAccess{MultiUser: true}
	users := []Mentioned{
		{ID: "olga"},                       // the owner
		{ID: "vic", ShareRole: RoleViewer}, // a viewer (perhaps by an earlier mention)
		{ID: "ed", ShareRole: RoleEditor},  // an editor
		{ID: "root", IsAdmin: true},        // an administrator
		{ID: "sam"},                        // without access
	}
	for _, tc := range []struct {
		name                    string
		a                       FileAccess
		author                  *User
		f                       *File
		notified, grant, others string
	}{
		{"owner", multi, &User{ID: "olga"}, owned, "[olga vic ed root sam]", "[vic sam]", "[]"},
		{"admin", multi, &User{ID: "root", IsAdmin: true}, owned, "[olga vic ed root sam]", "[vic sam]", "[]"},
		{"editor", multi, &User{ID: "ed"}, owned, "[olga vic ed root]", "[]", "[sam]"},
		{"admin on an unclaimed file", multi, &User{ID: "root", IsAdmin: true}, unclaimed, "[root]", "[]", "[olga vic ed sam]"},
		{"unclaimed files visible", FileAccess{MultiUser: true, UnclaimedVisible: true}, &User{ID: "root", IsAdmin: true}, unclaimed,
			"[olga vic ed root sam]", "[]", "[]"},
		{"single-user mode", FileAccess{}, &User{Anonymous: true, IsAdmin: true}, owned, "[olga vic ed root sam]", "[]", "[]"},
	} {
		r := tc.a.Mentions(tc.author, tc.f, users)
		if got := fmt.Sprint(r.Notified); got != tc.notified {
			t.Errorf("%s: notified %s, want %s", tc.name, got, tc.notified)
		}
		if got := fmt.Sprint(r.Grant); got != tc.grant {
			t.Errorf("%s: grant %s, want %s", tc.name, got, tc.grant)
		}
		if got := fmt.Sprint(r.NotNotified); got != tc.others {
			t.Errorf("%s: not notified %s, want %s", tc.name, got, tc.others)
		}
	}
}
