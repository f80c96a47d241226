package bleve

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"docflow"
)

func randVec(rng *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func mustNorm(t *testing.T, v []float32) []float32 {
	t.Helper()
	n, err := normalize(v)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDotMatchesGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{1, 7, 8, 9, 31, 32, 33, 384, 385, 1000} {
		a, b := randVec(rng, n), randVec(rng, n)
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		if got := float64(dot(a, b)); math.Abs(got-want) > 1e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("n=%d: dot = %v, want %v", n, got, want)
		}
		if got := float64(dotGeneric(a, b)); math.Abs(got-want) > 1e-3*math.Max(1, math.Abs(want)) {
			t.Errorf("n=%d: dotGeneric = %v, want %v", n, got, want)
		}
	}
}

// TestNearestMatchesBruteForce checks the parallel scan and bounded heaps
// against sorting every score.
func TestNearestMatchesBruteForce(t *testing.T) {
	const n, dims = 30_000, 16 // enough vectors for several scan goroutines
	rng := rand.New(rand.NewPCG(2, 2))
	s, err := openVectorStore(filepath.Join(t.TempDir(), "v.log"), dims, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var puts []vectorEntry
	for i := range n {
		puts = append(puts, vectorEntry{id: int64(i + 1), vec: mustNorm(t, randVec(rng, dims)), owner: []string{"a", "b"}[i%2]})
	}
	if err := s.apply(puts, nil); err != nil {
		t.Fatal(err)
	}
	q := randVec(rng, dims)
	qn := mustNorm(t, q)
	type scored struct {
		id    int64
		score float64
	}
	var all []scored
	for _, p := range puts {
		if p.owner != "b" || p.id == 2 {
			continue
		}
		all = append(all, scored{p.id, float64(dot(qn, p.vec))})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].score > all[j].score })
	got, err := s.nearest(q, 10, 0, &docflow.Visibility{UserID: "b"}, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 {
		t.Fatalf("got %d neighbours", len(got))
	}
	for i, g := range got {
		if g.FileID != all[i].id || math.Abs(g.Score-math.Max(all[i].score, 0)) > 1e-6 {
			t.Fatalf("neighbour %d = %+v, want %+v", i, g, all[i])
		}
	}
	if got, _ := s.nearest(q, 0, 0, nil, nil); got != nil {
		t.Errorf("k=0 returned %v", got)
	}
	if _, err := s.nearest(make([]float32, dims), 3, 0, nil, nil); err == nil {
		t.Error("zero query vector accepted")
	}
	if _, err := s.nearest(make([]float32, dims+1), 3, 0, nil, nil); err == nil {
		t.Error("query vector of the wrong dimension accepted")
	}
	// k larger than the store.
	if got, _ := s.nearest(q, n*2, 0, nil, nil); len(got) > n {
		t.Errorf("k > n returned %d", len(got))
	}
}

func TestVectorLogReplayAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.log")
	s, err := openVectorStore(path, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2, v3 := mustNorm(t, []float32{1, 0, 0}), mustNorm(t, []float32{0, 1, 0}), mustNorm(t, []float32{1, 1, 0})
	if err := s.apply([]vectorEntry{{id: 1, vec: v1, owner: "alice", shared: []string{"bob", "carol"}}, {id: 2, vec: v2}, {id: 3, vec: v3}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.apply([]vectorEntry{{id: 2, vec: v3, owner: "dave"}}, []int64{3}); err != nil {
		t.Fatal(err)
	}
	if err := s.apply(nil, []int64{42}); err != nil { // unknown id: fine
		t.Fatal(err)
	}
	s.close()
	good, _ := os.ReadFile(path)

	// A crash mid-append leaves half a record: it is dropped and the log
	// stays appendable.
	if err := os.WriteFile(path, append(slices.Clone(good), 0x50, 0, 0, 0, 1, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = openVectorStore(path, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if s.dims != 3 || s.len() != 2 || !s.has(1) || !s.has(2) || s.has(3) {
		t.Fatalf("after replay: dims %d, len %d, ids %v", s.dims, s.len(), s.ids)
	}
	i := s.slot[1]
	if s.owners[i] != "alice" || !slices.Equal(s.shared[i], []string{"bob", "carol"}) {
		t.Errorf("visibility of 1 = %q %v", s.owners[i], s.shared[i])
	}
	if j := s.slot[2]; s.owners[j] != "dave" || !slices.Equal(s.data[j*3:j*3+3], v3) {
		t.Errorf("2 = %q %v, want the replacement", s.owners[j], s.data[j*3:j*3+3])
	}
	if st, _ := os.Stat(path); st.Size() != int64(len(good)) {
		t.Errorf("log is %d bytes, want truncated to %d", st.Size(), len(good))
	}
	if err := s.apply([]vectorEntry{{id: 5, vec: v1}}, nil); err != nil {
		t.Fatal(err)
	}
	s.close()
	s, err = openVectorStore(path, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if !s.has(5) || s.len() != 3 {
		t.Errorf("append after truncation lost: %v", s.ids)
	}
	// A configured dimension that disagrees with the log is refused.
	s.close()
	if _, err := openVectorStore(path, 4, true); err == nil {
		t.Error("opened a 3-dimension log as 4 dimensions")
	}
	if err := os.WriteFile(path, []byte("not a log at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openVectorStore(path, 0, true); err == nil {
		t.Error("opened a file that is not a vector log")
	}
}

func TestVectorLogCompaction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.log")
	s, err := openVectorStore(path, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	v := mustNorm(t, []float32{1, 2, 3, 4})
	// Replace the same 10 vectors until the log must be compacted.
	for round := 0; round < compactSlack/10+20; round++ {
		var puts []vectorEntry
		for id := int64(1); id <= 10; id++ {
			puts = append(puts, vectorEntry{id: id, vec: v})
		}
		if err := s.apply(puts, nil); err != nil {
			t.Fatal(err)
		}
	}
	if s.records > 2*10+compactSlack {
		t.Errorf("log holds %d records for 10 vectors: not compacted", s.records)
	}
	s.close()
	s, err = openVectorStore(path, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.len() != 10 {
		t.Errorf("after compaction and reopen: %d vectors, want 10", s.len())
	}
}

func TestNormalizeRejects(t *testing.T) {
	for _, v := range [][]float32{{0, 0}, {float32(math.NaN()), 1}, {float32(math.Inf(1)), 0}} {
		if _, err := normalize(v); err == nil {
			t.Errorf("normalize(%v) accepted", v)
		}
	}
}
