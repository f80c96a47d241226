package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"docflow"
)

// One rule decides who may see and do what with a file, and every route
// follows it: the test below asks each route of the API as `docflow api`
// builds it, for each kind of user (owner, editor, viewer, stranger,
// administrator) and each kind of file (owned, unclaimed), with
// UNCLAIMED_FILES_VISIBLE off and on, and compares every answer with the
// rule, stated here on its own. A route that answers otherwise, or two
// routes that disagree on whether a user may see a file, fail it.

// fileKind is a file as the rule tells files apart.
type fileKind string

const (
	kOwned     fileKind = "owned"
	kUnclaimed fileKind = "unclaimed"
)

// ruleAllows is the rule: the share role table for owned files;
// unclaimed files are administrators', and with UNCLAIMED_FILES_VISIBLE
// every signed-in user may also view and claim them.
func ruleAllows(visible bool, role string, kind fileKind, need docflow.Access) bool {
	if kind == kUnclaimed {
		return role == rAdmin || (visible && (need == docflow.AccessView || need == docflow.AccessClaim))
	}
	switch role {
	case rOwner:
		return true
	case rAdmin:
		return need != docflow.AccessClaim
	case rEditor:
		return need == docflow.AccessView || need == docflow.AccessComment || need == docflow.AccessEdit
	case rViewer:
		return need == docflow.AccessView
	}
	return false
}

// jsonIDs collects the numbers found under key anywhere in a JSON body.
func jsonIDs(t *testing.T, body []byte, key string) map[int64]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %.200s: %v", body, err)
	}
	out := map[int64]bool{}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if n, ok := e.(float64); ok && k == key {
					out[int64(n)] = true
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// unclaimed turns a document of re.doc into one without an owner (as a
// watch folder or a single-user upload leaves it) and indexes it so.
func (re *roleEnv) unclaimed(id int64) int64 {
	re.t.Helper()
	ctx := context.Background()
	if _, err := re.a.DB.Pool.Exec(ctx, `DELETE FROM shares WHERE file_id=$1`, id); err != nil {
		re.t.Fatal(err)
	}
	if _, err := re.a.DB.Pool.Exec(ctx, `UPDATE files SET owner_id=NULL WHERE id=$1`, id); err != nil {
		re.t.Fatal(err)
	}
	docs, err := re.search.SearchDocuments(ctx, []int64{id})
	if err != nil || docs[id] == nil || docs[id].OwnerID != "" {
		re.t.Fatalf("search document of %d: %+v %v", id, docs[id], err)
	}
	if failed, err := re.a.Index.Index(ctx, []*docflow.SearchDocument{docs[id]}); err != nil || len(failed) > 0 {
		re.t.Fatalf("index: %v %v", failed, err)
	}
	return id
}

// matrixRoute is one route of the matrix: need is the right it exercises;
// answer turns its response into whether it allowed the request, or
// reports an answer the rule does not foresee.
type matrixRoute struct {
	name   string
	method string
	path   string // %d is the file id
	body   any    // "ids": the file id as a JSON array
	need   docflow.Access
	fresh  bool // on a document of its own (the route changes it)
	// ok and refused are the statuses of an allowed and a refused request
	// (refused 0: any refusal is an error status the API gives, checked
	// by check).
	ok, refused int
	// check, when set, reads an answer further and returns whether the
	// request was allowed.
	check func(t *testing.T, kind fileKind, id int64, status int, body []byte) (bool, error)
}

func TestEveryFileRouteFollowsOneRule(t *testing.T) {
	t.Parallel()
	re := newRoleEnv(t)
	owned := re.doc([]float32{1, 0})
	free := re.unclaimed(re.doc([]float32{1, 0.05}))
	ids := map[fileKind]int64{kOwned: owned, kUnclaimed: free}
	re.pair(owned, free)

	listed := func(key string) func(*testing.T, fileKind, int64, int, []byte) (bool, error) {
		return func(t *testing.T, _ fileKind, id int64, status int, body []byte) (bool, error) {
			if status != 200 {
				return false, fmt.Errorf("status %d", status)
			}
			return jsonIDs(t, body, key)[id], nil
		}
	}
	bulkReprocess := func(t *testing.T, _ fileKind, id int64, status int, body []byte) (bool, error) {
		var out struct {
			Processed []struct {
				FileID int64 `json:"file_id"`
			} `json:"processed_files"`
			Errors []struct {
				FileID int64  `json:"file_id"`
				Error  string `json:"error"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(body, &out); err != nil || status != 200 {
			return false, fmt.Errorf("status %d: %.200s", status, body)
		}
		done := len(out.Processed) == 1 && out.Processed[0].FileID == id
		refused := len(out.Errors) == 1 && out.Errors[0].FileID == id && out.Errors[0].Error == "File not found"
		if done == refused {
			return false, fmt.Errorf("neither queued nor refused: %.300s", body)
		}
		return done, nil
	}
	bulkClaim := func(t *testing.T, kind fileKind, id int64, status int, body []byte) (bool, error) {
		var out struct {
			Claimed []int64             `json:"claimed_ids"`
			Skipped []docflow.ClaimSkip `json:"skipped"`
		}
		if err := json.Unmarshal(body, &out); err != nil || status != 200 {
			return false, fmt.Errorf("status %d: %.200s", status, body)
		}
		switch {
		case slices.Equal(out.Claimed, []int64{id}) && len(out.Skipped) == 0:
			return true, nil
		case len(out.Claimed) == 0 && len(out.Skipped) == 1 && out.Skipped[0].Reason == "already owned by you":
			return true, nil // the owner's own file: allowed, nothing to do
		case len(out.Claimed) == 0 && len(out.Skipped) == 1 && out.Skipped[0].Reason == "owned by another user":
			return false, nil // also an unclaimed file the user may not see
		}
		return false, fmt.Errorf("unforeseen answer %.300s", body)
	}
	createShare := func(t *testing.T, kind fileKind, id int64, status int, body []byte) (bool, error) {
		// An unclaimed file cannot be shared (400) by whoever may share it.
		switch {
		case status == 201 && kind == kOwned, status == 400 && kind == kUnclaimed:
			return true, nil
		case status == 403:
			return false, nil
		}
		return false, fmt.Errorf("status %d: %.200s", status, body)
	}

	routes := []matrixRoute{
		// Listings, search and similarity: the file is listed exactly when
		// it may be viewed.
		{name: "files list", method: "GET", path: "/api/files?per_page=200", need: docflow.AccessView, check: listed("id")},
		{name: "files list by name", method: "GET", path: "/api/files?per_page=200&sort_by=original_filename&sort_order=asc", need: docflow.AccessView, check: listed("id")},
		{name: "files list, completed", method: "GET", path: "/api/files?per_page=200&status=completed", need: docflow.AccessView, check: listed("id")},
		{name: "files search", method: "GET", path: "/api/files?per_page=200&search=note", need: docflow.AccessView, check: listed("id")},
		{name: "search", method: "GET", path: "/api/search?q=zebra&per_page=100", need: docflow.AccessView, check: listed("file_id")},
		{name: "embedding diagnostics", method: "GET", path: "/api/diagnostic/embeddings", need: docflow.AccessView, check: listed("file_id")},
		// View.
		{name: "detail", method: "GET", path: "/api/files/%d", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "metadata", method: "GET", path: "/api/files/%d/metadata", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "preview", method: "GET", path: "/api/files/%d/preview?version=original", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "download", method: "GET", path: "/api/files/%d/download?version=original", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "comments", method: "GET", path: "/api/files/%d/comments", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "annotations", method: "GET", path: "/api/files/%d/annotations", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "shared-with", method: "GET", path: "/api/files/%d/shared-with", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "similar", method: "GET", path: "/api/files/%d/similar", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "embedding status", method: "GET", path: "/api/files/%d/embedding-status", need: docflow.AccessView, ok: 200, refused: 403},
		{name: "bulk-download", method: "POST", path: "/api/files/bulk-download", body: "ids", need: docflow.AccessView, ok: 200, refused: 404},
		// Comment and annotate.
		{name: "comment", method: "POST", path: "/api/files/%d/comments", body: map[string]any{"body": "hi"}, need: docflow.AccessComment, ok: 201, refused: 403},
		{name: "annotate", method: "POST", path: "/api/files/%d/annotations", body: map[string]any{"page": 1, "x": 0, "y": 0}, need: docflow.AccessComment, ok: 201, refused: 403},
		// Edit.
		{name: "assign pipeline", method: "POST", path: "/api/files/%d/assign-pipeline", need: docflow.AccessEdit, ok: 200, refused: 403},
		{name: "reprocess", method: "POST", path: "/api/files/%d/reprocess", need: docflow.AccessEdit, fresh: true, ok: 200, refused: 403},
		{name: "compute embedding", method: "POST", path: "/api/files/%d/compute-embedding", need: docflow.AccessEdit, fresh: true, ok: 200, refused: 403},
		{name: "bulk-reprocess", method: "POST", path: "/api/files/bulk-reprocess", body: "ids", need: docflow.AccessEdit, fresh: true, check: bulkReprocess},
		// Share.
		{name: "list shares", method: "GET", path: "/api/files/%d/shares", need: docflow.AccessShare, ok: 200, refused: 403},
		{name: "share", method: "POST", path: "/api/files/%d/shares", body: map[string]any{"shared_with_user_id": "guest@example.com"}, need: docflow.AccessShare, check: createShare},
		// Delete.
		{name: "delete", method: "DELETE", path: "/api/files/%d", need: docflow.AccessDelete, fresh: true, ok: 200, refused: 403},
		{name: "bulk-delete", method: "POST", path: "/api/files/bulk-delete", body: "ids", need: docflow.AccessDelete, fresh: true, ok: 200, refused: 404},
		// Claim.
		{name: "claim", method: "POST", path: "/api/files/%d/claim", need: docflow.AccessClaim, fresh: true, ok: 200, refused: 403},
		{name: "bulk-claim", method: "POST", path: "/api/files/bulk-claim", body: "ids", need: docflow.AccessClaim, fresh: true, check: bulkClaim},
	}

	for _, visible := range []bool{false, true} {
		re.a.SetEnv("UNCLAIMED_FILES_VISIBLE", fmt.Sprint(visible))
		for _, role := range roleNames {
			for _, kind := range []fileKind{kOwned, kUnclaimed} {
				where := fmt.Sprintf("UNCLAIMED_FILES_VISIBLE=%v, %s, %s file", visible, role, kind)
				// The view routes' answers, to compare with one another.
				views := map[string]bool{}
				for _, rt := range routes {
					id := ids[kind]
					if rt.fresh {
						id = re.doc([]float32{0, 1})
						if kind == kUnclaimed {
							re.unclaimed(id)
						}
					}
					path := rt.path
					if strings.Contains(path, "%d") {
						path = fmt.Sprintf(path, id)
					}
					body := rt.body
					if body == "ids" {
						body = []int64{id}
					}
					status, b := re.do(role, rt.method, path, body)
					want := ruleAllows(visible, role, kind, rt.need)
					var got bool
					if rt.check != nil {
						var err error
						if got, err = rt.check(t, kind, id, status, b); err != nil {
							t.Errorf("%s: %s (%s %s): %v", where, rt.name, rt.method, path, err)
							continue
						}
					} else {
						switch status {
						case rt.ok:
							got = true
						case rt.refused:
							got = false
						default:
							t.Errorf("%s: %s (%s %s) answered %d, want %d or %d: %.300s", where, rt.name, rt.method, path, status, rt.ok, rt.refused, b)
							continue
						}
					}
					if got != want {
						t.Errorf("%s: %s (%s %s) allowed %v, the rule says %v: %d %.300s", where, rt.name, rt.method, path, got, want, status, b)
					}
					if rt.need == docflow.AccessView {
						views[rt.name] = got
					}
				}
				// No two routes disagree on whether the user sees the file.
				var seen, unseen []string
				for name, v := range views {
					if v {
						seen = append(seen, name)
					} else {
						unseen = append(unseen, name)
					}
				}
				if len(seen) > 0 && len(unseen) > 0 {
					sort.Strings(seen)
					sort.Strings(unseen)
					t.Errorf("%s: the routes disagree: %v show the file, %v do not", where, seen, unseen)
				}
			}

			// Similarity between the two files: a neighbour or a pair is
			// shown to whoever may see both.
			both := ruleAllows(visible, role, kOwned, docflow.AccessView) && ruleAllows(visible, role, kUnclaimed, docflow.AccessView)
			where := fmt.Sprintf("UNCLAIMED_FILES_VISIBLE=%v, %s", visible, role)
			// (The indexer stores pairs of the other documents too: every
			// page is read.)
			paired := false
			for page := 1; ; page++ {
				status, b := re.do(role, "GET", fmt.Sprintf("/api/similarity/pairs?threshold=0.5&limit=200&page=%d", page), nil)
				var out struct {
					Pairs []struct {
						A struct {
							ID int64 `json:"file_id"`
						} `json:"file_a"`
						B struct {
							ID int64 `json:"file_id"`
						} `json:"file_b"`
					} `json:"pairs"`
				}
				if err := json.Unmarshal(b, &out); err != nil || status != 200 {
					t.Fatalf("%s: pairs: %d %.300s", where, status, b)
				}
				for _, p := range out.Pairs {
					paired = paired || (p.A.ID == min(owned, free) && p.B.ID == max(owned, free))
				}
				if len(out.Pairs) < 200 {
					break
				}
			}
			if paired != both {
				t.Errorf("%s: the pair of the two files listed %v, want %v", where, paired, both)
			}
			for _, from := range []fileKind{kOwned, kUnclaimed} {
				if !ruleAllows(visible, role, from, docflow.AccessView) {
					continue
				}
				other := ids[kOwned] + ids[kUnclaimed] - ids[from]
				status, b := re.do(role, "GET", fmt.Sprintf("/api/files/%d/similar", ids[from]), nil)
				if got := status == 200 && jsonIDs(t, b, "file_id")[other]; got != both {
					t.Errorf("%s: the %s file's similar documents list the other %v, want %v: %d %.300s", where, from, got, both, status, b)
				}
			}

			// assign-owner is for administrators, whatever the file.
			id := re.unclaimed(re.doc([]float32{0, 1}))
			status, b := re.do(role, "POST", "/api/files/assign-owner?owner_id="+roleUsers[rStranger], []int64{id})
			if want := map[bool]int{true: 200, false: 403}[role == rAdmin]; status != want {
				t.Errorf("%s: assign-owner answered %d, want %d: %.300s", where, status, want, b)
			}
		}
	}
}
