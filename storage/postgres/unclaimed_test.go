package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

// TestListingsFollowTheVisibility: every query that filters by a
// docflow.Visibility (the listing in each of its plans, file summaries,
// embedding status and coverage, similarity pairs) selects the files
// Visibility.Sees selects, unclaimed files included when the filter says
// so.
func TestListingsFollowTheVisibility(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, files := openFiles(t)
	search := postgres.NewSearchStore(db)
	shares := postgres.NewShareStore(db)
	type file struct {
		id    int64
		owner *string
		role  map[string]string
	}
	var all []file
	n := 0
	add := func(owner string) int64 {
		t.Helper()
		n++
		f := newFile(fmt.Sprintf("vis%03d", n), owner)
		if _, err := files.Ingest(ctx, docflow.IngestRecord{File: f, Dedup: true}); err != nil {
			t.Fatal(err)
		}
		all = append(all, file{id: f.ID, owner: f.OwnerID, role: map[string]string{}})
		if err := search.PutEmbedding(ctx, &docflow.Embedding{FileID: f.ID, Model: "m", Vector: []float32{1, 0}}); err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	for range 3 {
		add("alice")
		add("bob")
		add("")
	}
	shared := add("bob")
	if _, _, err := shares.PutShare(ctx, shared, "bob", "alice", docflow.RoleEditor); err != nil {
		t.Fatal(err)
	}
	all[len(all)-1].role["alice"] = docflow.RoleEditor
	// Every file is similar to every other.
	pairs := map[int64][]docflow.Neighbor{}
	for _, a := range all {
		for _, b := range all {
			if a.id != b.id {
				pairs[a.id] = append(pairs[a.id], docflow.Neighbor{FileID: b.id, Score: 0.9})
			}
		}
	}
	if err := search.ReplaceSimilarityPairs(ctx, pairs); err != nil {
		t.Fatal(err)
	}

	for _, v := range []*docflow.Visibility{nil, {UserID: "alice"}, {UserID: "alice", Unclaimed: true}, {UserID: "carol", Unclaimed: true},
		{UserID: "carol"}, {Unclaimed: true}, {}} {
		var want []int64
		user := ""
		if v != nil {
			user = v.UserID
		}
		for _, f := range all {
			if v.Sees(f.owner, f.role[user]) {
				want = append(want, f.id)
			}
		}
		name := fmt.Sprintf("%+v", v)
		// The listing, by date (file_access where it can) and by name.
		for _, sortBy := range []string{"created_at", "original_filename"} {
			got, total, err := files.ListFiles(ctx, docflow.FileFilter{VisibleTo: v, SortBy: sortBy, PerPage: 100, Page: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, f := range got {
				ids = append(ids, f.ID)
			}
			slices.Sort(ids)
			if fmt.Sprint(ids) != fmt.Sprint(want) || total != len(want) {
				t.Errorf("%s, listing by %s: %v (total %d), want %v", name, sortBy, ids, total, want)
			}
		}
		ids := make([]int64, len(all))
		for i, f := range all {
			ids[i] = f.id
		}
		sums, err := search.FileSummaries(ctx, ids, v)
		if err != nil || len(sums) != len(want) {
			t.Errorf("%s: %d summaries (%v), want %d", name, len(sums), err, len(want))
		}
		for _, f := range all {
			_, err := search.EmbeddingStatus(ctx, f.id, v)
			if seen := slices.Contains(want, f.id); seen != (err == nil) {
				t.Errorf("%s: embedding status of %d: %v, visible %v", name, f.id, err, seen)
			}
		}
		cov, err := search.EmbeddingCoverage(ctx, v)
		if err != nil || cov.TotalFiles != len(want) {
			t.Errorf("%s: coverage %+v (%v), want %d files", name, cov, err, len(want))
		}
		_, total, err := search.FindSimilarityPairs(ctx, docflow.SimilarityPairFilter{VisibleTo: v, PerPage: 1})
		if k := len(want); err != nil || total != k*(k-1)/2 {
			t.Errorf("%s: %d pairs (%v), want %d", name, total, err, k*(k-1)/2)
		}
	}
}
