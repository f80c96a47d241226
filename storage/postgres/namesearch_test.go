package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"docflow"
)

func trigramStrings(ts []trigram) []string {
	out := []string{}
	for _, t := range ts {
		s := string(t[:])
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// The trigrams counted for a name are the ones pg_trgm indexes.
func TestNameTrigramsMatchPgTrgm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	for _, name := range []string{"invoice-12.pdf", "scan 2024_07 acme.pdf", "a", "ab-c", "x.y.z", "--", "", "report (final) v2.docx", "a1b2c3"} {
		var got []string
		if err := db.Pool.QueryRow(ctx, `SELECT show_trgm($1)`, name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		if want := trigramStrings(nameTrigrams(name)); !slices.Equal(got, want) {
			t.Errorf("%q: pg_trgm %q, counted %q", name, got, want)
		}
	}
}

// LIKE '%s%' gives pg_trgm the trigrams of the words of s, padded only
// where s shows a word boundary.
func TestPatternTrigrams(t *testing.T) {
	t.Parallel()
	for s, want := range map[string][]string{
		"invoice-12": {" 12", "  1", "ce ", "ice", "inv", "nvo", "oic", "voi"},
		"-12":        {" 12", "  1"},
		"e-12":       {" 12", "  1"},
		"12":         {},
		"ab":         {},
		"abc":        {"abc"},
		"-a-":        {"  a", " a "},
		"a.b":        {"  b"},
		".pdf":       {"  p", " pd", "pdf"},
	} {
		got := trigramStrings(patternTrigrams([]rune(s)))
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", s, got, want)
		}
		if hasTrigrams(s) != (len(want) > 0) {
			t.Errorf("%q: hasTrigrams %v", s, hasTrigrams(s))
		}
	}
}

func invoiceNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("invoice-%d.pdf", i+1)
	}
	return names
}

// A search is read from the index by its rare part: the trigrams every name
// shares are left to the check of the whole pattern.
func TestChooseSkipsSharedTrigrams(t *testing.T) {
	t.Parallel()
	st := newTrigramSample(invoiceNames(trigramSampleNames))
	part := st.choose("invoice-12")
	if !strings.HasSuffix(part, "-12") || strings.Contains(part, "ce") {
		t.Fatalf(`"invoice-12" read as %q`, part)
	}
	// Trigrams no sampled name has: the whole search, the most selective.
	if part := st.choose("zebra"); part != "zebra" {
		t.Fatalf(`"zebra" read as %q`, part)
	}
	// The rare word is kept, the common number left to the check.
	if part := st.choose("zebra-7"); !strings.HasPrefix(part, "zebra") {
		t.Fatalf(`"zebra-7" read as %q`, part)
	}
	// Nothing to choose from: the search as it is.
	for _, s := range []string{"ab", "", strings.Repeat("x", maxChosenSearchRunes+1)} {
		if part := st.choose(s); part != s {
			t.Fatalf("%q read as %q", s, part)
		}
	}
	if part := newTrigramSample(nil).choose("invoice-12"); part != "invoice-12" {
		t.Fatalf("empty sample: %q", part)
	}
}

// Reading the index by a part of the search changes no result: every
// search, with or without a sample of names, with LIKE's special
// characters, returns what the whole pattern selects.
func TestFindFilesSearchByRarePart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openTest(t)
	_, err := db.Pool.Exec(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, status, created_at)
		SELECT md5(i::text), CASE WHEN i % 500 = 0 THEN 'Zebra_' || i || '%.PDF' ELSE 'invoice-' || i || '.pdf' END,
		       i || '.pdf', i, 'application/pdf', (ARRAY['completed','failed'])[1 + i % 2],
		       TIMESTAMPTZ '2024-01-01' + i * interval '1 hour'
		FROM generate_series(1, 3000) AS i`)
	if err != nil {
		t.Fatal(err)
	}
	s := NewFileStore(db)
	searches := []string{"invoice-12", "INVOICE-2", "zebra_1", "%.pdf", "_5", "e-1", "ab", "1", "ice-29", "Zebra", "nothing"}
	check := func(when string) {
		for _, search := range searches {
			var want int
			db.Pool.QueryRow(ctx, `SELECT count(*) FROM files WHERE strpos(lower(original_filename), lower($1)) > 0 AND status = 'completed'`, search).Scan(&want)
			files, total, err := s.FindFiles(ctx, docflow.FileFilter{Search: search, Status: "completed", PerPage: 100, Page: 1})
			if err != nil {
				t.Fatalf("%s, %q: %v", when, search, err)
			}
			if total != want || len(files) != min(want, 100) {
				t.Fatalf("%s, %q: %d files, total %d, want %d", when, search, len(files), total, want)
			}
			for _, f := range files {
				if !strings.Contains(strings.ToLower(f.OriginalFilename), strings.ToLower(search)) || f.Status != "completed" {
					t.Fatalf("%s, %q: %s (%s) does not match", when, search, f.OriginalFilename, f.Status)
				}
			}
		}
	}
	check("before a sample")
	s.names.load()
	if s.names.sample == nil || s.names.sample.n != trigramSampleNames {
		t.Fatalf("sample of %v names", s.names.sample)
	}
	if part := s.names.choose("invoice-12"); part == "invoice-12" {
		t.Fatal("the sample did not change how invoice-12 is read")
	}
	check("with a sample")
}
