package api_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestOwnershipAndDeletionsAreAudited: claims (one file or in bulk),
// owner assignments and deletions (one file or in bulk) are in the audit
// log with who did them and which files they touched; a refused claim is
// not.
func TestOwnershipAndDeletionsAreAudited(t *testing.T) {
	re := newRoleEnv(t)
	type entry struct {
		Actor  string `json:"actor"`
		Action string `json:"action"`
		Target string `json:"target"`
		Detail string `json:"detail"`
	}
	entries := func(action string) []entry {
		t.Helper()
		var out struct {
			Entries []entry `json:"entries"`
		}
		if err := json.Unmarshal(re.must(rAdmin, "GET", "/api/admin/audit-log?per_page=200&action="+action, nil, 200), &out); err != nil {
			t.Fatal(err)
		}
		return out.Entries
	}
	unclaimed := func() int64 { return re.unclaimed(re.doc([]float32{1, 0})) }

	// A refused claim (unclaimed files are administrators' by default).
	refused := unclaimed()
	re.must(rStranger, "POST", fmt.Sprintf("/api/files/%d/claim", refused), nil, 403)
	if got := entries("file.claim"); len(got) != 0 {
		t.Fatalf("a refused claim is audited: %+v", got)
	}

	re.a.SetEnv("UNCLAIMED_FILES_VISIBLE", "true")
	one, two, three := unclaimed(), unclaimed(), unclaimed()
	re.must(rStranger, "POST", fmt.Sprintf("/api/files/%d/claim", one), nil, 200)
	re.must(rOwner, "POST", "/api/files/bulk-claim", []int64{two, three, one}, 200)
	claims := entries("file.claim")
	if len(claims) != 2 {
		t.Fatalf("claims audited: %+v", claims)
	}
	// Newest first.
	if c := claims[1]; c.Actor != roleUsers[rStranger] || c.Target != fmt.Sprintf("file:%d", one) {
		t.Errorf("the claim of one file: %+v", c)
	}
	if c := claims[0]; c.Actor != roleUsers[rOwner] || c.Target != "files" || !strings.HasSuffix(c.Detail, fmt.Sprintf(": %d, %d", two, three)) {
		t.Errorf("the bulk claim: %+v", c)
	}

	// An administrator gives a file of the owner's and an unclaimed one to
	// the stranger.
	owned, free := re.doc([]float32{1, 0}), unclaimed()
	re.must(rAdmin, "POST", "/api/files/assign-owner?owner_id="+roleUsers[rStranger], []int64{owned, free}, 200)
	assigned := entries("file.assign_owner")
	details := []string{}
	for _, e := range assigned {
		if e.Actor != roleUsers[rAdmin] || e.Target != "files" {
			t.Errorf("assign-owner entry %+v", e)
		}
		details = append(details, e.Detail)
	}
	all := strings.Join(details, "\n")
	for _, want := range []string{
		fmt.Sprintf("assigned to %s files owned by %s: %d", roleUsers[rStranger], roleUsers[rOwner], owned),
		fmt.Sprintf("assigned to %s files that had no owner: %d", roleUsers[rStranger], free),
	} {
		if !strings.Contains(all, want) {
			t.Errorf("assign-owner entries %q lack %q", all, want)
		}
	}

	// Deletions.
	gone, bulk1, bulk2 := re.doc([]float32{1, 0}), re.doc([]float32{1, 0}), re.doc([]float32{1, 0})
	re.must(rOwner, "DELETE", fmt.Sprintf("/api/files/%d", gone), nil, 200)
	re.must(rAdmin, "POST", "/api/files/bulk-delete", []int64{bulk1, bulk2}, 200)
	deletions := entries("file.delete")
	if len(deletions) != 2 {
		t.Fatalf("deletions audited: %+v", deletions)
	}
	if d := deletions[1]; d.Actor != roleUsers[rOwner] || d.Target != fmt.Sprintf("file:%d", gone) ||
		!strings.Contains(d.Detail, fmt.Sprintf("note%d.txt", re.seq-2)) || !strings.Contains(d.Detail, "owner "+roleUsers[rOwner]) {
		t.Errorf("the deletion of one file: %+v", d)
	}
	if d := deletions[0]; d.Actor != roleUsers[rAdmin] || d.Target != "files" || !strings.HasSuffix(d.Detail, fmt.Sprintf(": %d, %d", min(bulk1, bulk2), max(bulk1, bulk2))) {
		t.Errorf("the bulk deletion: %+v", d)
	}
}
