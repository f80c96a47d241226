package docflow

import (
	"fmt"
	"strings"
	"testing"
)

func TestExtractMentions(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"hi @bob", "[bob]"},
		{"@bob, @Bob and @BOB.", "[bob]"},
		{"ask @ann@example.com.", "[ann@example.com]"},
		{"(@ann-marie) @o.brien_2", "[ann-marie o.brien_2]"},
		{"mail ann@example.com or me@x", "[]"},
		{"@ @@ @. @- @@bob", "[]"},
		{"@ann@nodot @ann+tag@example.co.uk", "[ann+tag@example.co.uk]"},
		{"@zoë and @日本", "[zoë 日本]"},
		{"@a%b @a@b@c.com", "[]"},
	} {
		got := ExtractMentions(tc.body)
		if got == nil {
			got = []string{}
		}
		if fmt.Sprint(got) != tc.want {
			t.Errorf("%q: %v, want %s", tc.body, got, tc.want)
		}
	}
	many := strings.Repeat("@u ", 10) + func() string {
		var b strings.Builder
		for i := range 2 * MaxMentions {
			fmt.Fprintf(&b, "@user%d ", i)
		}
		return b.String()
	}()
	if n := len(ExtractMentions(many)); n != MaxMentions {
		t.Fatalf("%d mentions", n)
	}
}

func TestThreadComments(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	flat := []*Comment{{ID: 1}, {ID: 2, ParentID: p(1)}, {ID: 3}, {ID: 4, ParentID: p(2)}, {ID: 5, ParentID: p(1)}, {ID: 6, ParentID: p(99)}}
	roots := ThreadComments(flat)
	var b strings.Builder
	var walk func([]*Comment)
	walk = func(cs []*Comment) {
		b.WriteString("(")
		for _, c := range cs {
			fmt.Fprint(&b, c.ID)
			walk(c.Replies)
		}
		b.WriteString(")")
	}
	walk(roots)
	if b.String() != "(1(2(4())5())3()6())" {
		t.Fatalf("tree %s", b.String())
	}
}

func TestCheckAnnotationRegion(t *testing.T) {
	a := &Annotation{Page: 1, X: 0.1, Width: 0.9, Y: 0.7, Height: 0.3, AnnotationType: AnnotationNote, Color: "#ABCDEF"}
	if err := CheckAnnotation(a); err != nil || a.Color != "#abcdef" {
		t.Fatalf("%v %s", err, a.Color)
	}
	a.Width = 0.95
	if err := CheckAnnotation(a); ErrorCode(err) != EINVALID {
		t.Fatalf("past the edge: %v", err)
	}
}

func TestCheckShareTarget(t *testing.T) {
	owner := "alice"
	for _, tc := range []struct {
		id, caller string
		ok         bool
	}{
		{" bob ", "alice", true}, {"alice", "alice", false}, {"alice", "admin", false}, {"admin", "admin", false},
		{"", "alice", false}, {strings.Repeat("b", MaxUserIDLength+1), "alice", false},
	} {
		id, err := CheckShareTarget(tc.id, tc.caller, &owner)
		if (err == nil) != tc.ok || (tc.ok && id != strings.TrimSpace(tc.id)) {
			t.Errorf("%q by %s: %q %v", tc.id, tc.caller, id, err)
		}
	}
}
