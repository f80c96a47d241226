package postgres

import (
	"context"
	"math/bits"
	"sync"
	"time"
	"unicode"
)

// nameIndex chooses, for a filename search, the part of the pattern that
// the trigram index of file_names.name_key reads; the whole pattern is then
// checked on the rows the index returns.
//
// NOTE: pg_trgm's GIN index intersects the posting lists of every trigram
// of a LIKE pattern. A trigram that most names share ("inv" when most
// files are invoices, "pdf") has a long posting list and removes almost no
// candidate: searching "invoice-12" among 100,000 invoices read six lists
// of 100,000 entries to keep 1,111 rows, about a third of the query. The
// index is therefore given the substring of the search whose trigrams are
// cheapest for the candidates they leave, as estimated from a sample of
// names; for a search of rare trigrams that is the whole search.
type nameIndex struct {
	db *DB

	mu      sync.Mutex
	sample  *trigramSample // nil until the first sample is read
	at      time.Time      // when sample was read (or last tried)
	loading bool
	choices map[string]string // search → chosen substring, for sample
}

// Sample sizes and refresh periods.
const (
	trigramSampleNames = 2048
	// A full sample is read again after trigramSampleAge; a table that had
	// fewer names than a full sample is read again sooner, as it grows.
	trigramSampleAge      = 5 * time.Minute
	trigramSampleAgeSmall = 10 * time.Second
	// Longer searches are given to the index whole: they are selective
	// anyway, and the choice costs O(runes²).
	maxChosenSearchRunes = 32
	maxNameChoices       = 1024
	// candidateCost is what rechecking one candidate row costs, in posting
	// list entries read (measured: about 0.3 µs against about 1.5 ns).
	candidateCost = 200
)

func newNameIndex(db *DB) *nameIndex {
	return &nameIndex{db: db, choices: map[string]string{}}
}

// choose returns the substring of search (lower-cased, not escaped) whose
// pattern the index should read. It never waits for the database: without
// a sample yet it returns search and starts reading one.
func (x *nameIndex) choose(search string) string {
	x.mu.Lock()
	st := x.sample
	age := trigramSampleAge
	if st != nil && st.n < trigramSampleNames {
		age = trigramSampleAgeSmall
	}
	if !x.loading && (st == nil || x.db.Now().Sub(x.at) > age) {
		x.loading = true
		go x.load()
	}
	if st == nil {
		x.mu.Unlock()
		return search
	}
	if c, ok := x.choices[search]; ok {
		x.mu.Unlock()
		return c
	}
	x.mu.Unlock()
	c := st.choose(search)
	x.mu.Lock()
	if x.sample == st {
		if len(x.choices) >= maxNameChoices {
			clear(x.choices)
		}
		x.choices[search] = c
	}
	x.mu.Unlock()
	return c
}

// load reads a new sample in the background; on failure the old one (or
// none) stays until the next period.
func (x *nameIndex) load() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := x.read(ctx)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.loading = false
	x.at = x.db.Now()
	if err != nil {
		return
	}
	x.sample = st
	clear(x.choices)
}

// read samples up to trigramSampleNames names from random pages of the
// table (tsm_system_rows reads no more pages than that takes, whatever the
// table's size).
func (x *nameIndex) read(ctx context.Context) (*trigramSample, error) {
	rows, err := x.db.Pool.Query(ctx, `SELECT name_key FROM file_names TABLESAMPLE SYSTEM_ROWS($1)`, trigramSampleNames)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		names = append(names, s)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return newTrigramSample(names), nil
}

// trigramSample is, for each trigram of a sample of names, which names
// have it.
type trigramSample struct {
	n    int
	post map[trigram][]uint16 // ascending sample indexes
}

type trigram [3]rune

func newTrigramSample(names []string) *trigramSample {
	if len(names) > trigramSampleNames {
		names = names[:trigramSampleNames]
	}
	st := &trigramSample{n: len(names), post: map[trigram][]uint16{}}
	for i, name := range names {
		seen := map[trigram]bool{}
		for _, t := range nameTrigrams(name) {
			if !seen[t] {
				seen[t] = true
				st.post[t] = append(st.post[t], uint16(i))
			}
		}
	}
	return st
}

// choose returns the substring of search with the lowest estimated cost:
// the posting entries its trigrams make the index read, plus candidateCost
// for each row they let through. Among equal costs the one with more
// trigrams (the more selective) wins, so a search of unseen trigrams is
// used whole.
func (st *trigramSample) choose(search string) string {
	r := []rune(search)
	if len(r) > maxChosenSearchRunes || st.n == 0 {
		return search
	}
	words := (st.n + 63) / 64
	all := make([]uint64, words)
	for i := range st.n {
		all[i/64] |= 1 << (i % 64)
	}
	floor := 0.5 / float64(st.n)
	best, bestCost, bestN := search, -1.0, 0
	set := make([]uint64, words)
	for i := range r {
		copy(set, all)
		seen := map[trigram]bool{}
		sum := 0.0
		for j := i + 1; j <= len(r); j++ {
			for _, t := range patternTrigrams(r[i:j]) {
				if seen[t] {
					continue
				}
				seen[t] = true
				p := st.post[t]
				sum += float64(len(p)) / float64(st.n)
				intersect(set, p)
			}
			if len(seen) == 0 {
				continue
			}
			if bestCost >= 0 && sum > bestCost {
				break // sum only grows with j
			}
			sel := max(float64(popcount(set))/float64(st.n), floor)
			cost := sum + candidateCost*sel
			if bestCost < 0 || cost < bestCost*(1-1e-9) || (cost <= bestCost*(1+1e-9) && len(seen) > bestN) {
				best, bestCost, bestN = string(r[i:j]), cost, len(seen)
			}
		}
	}
	return best
}

// intersect keeps in set only the members of the ascending list p.
func intersect(set []uint64, p []uint16) {
	k := 0
	for w := range set {
		var keep uint64
		for k < len(p) && int(p[k])/64 == w {
			keep |= 1 << (p[k] % 64)
			k++
		}
		set[w] &= keep
	}
}

func popcount(set []uint64) int {
	n := 0
	for _, w := range set {
		n += bits.OnesCount64(w)
	}
	return n
}

// isWordRune is pg_trgm's word character: trigrams come from runs of
// letters and digits.
func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

// nameTrigrams are the trigrams pg_trgm indexes for a name: each word
// padded with two spaces before and one after.
func nameTrigrams(name string) []trigram {
	return wordTrigrams([]rune(name), true, true)
}

// patternTrigrams are the trigrams pg_trgm extracts from LIKE '%s%' for a
// literal s: words inside s are padded where s shows their boundary, the
// first and last words are open where they touch the wildcards.
func patternTrigrams(s []rune) []trigram {
	return wordTrigrams(s, false, false)
}

// hasTrigrams reports whether pg_trgm finds a trigram in LIKE '%s%', that
// is whether the index can narrow the search at all.
func hasTrigrams(s string) bool { return len(patternTrigrams([]rune(s))) > 0 }

// wordTrigrams splits s into words and returns their padded trigrams;
// startBounded and endBounded say whether the ends of s are word
// boundaries (the ends of a name are; wildcards are not).
func wordTrigrams(s []rune, startBounded, endBounded bool) []trigram {
	var out []trigram
	var buf []rune
	for i := 0; i < len(s); {
		if !isWordRune(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isWordRune(s[j]) {
			j++
		}
		buf = buf[:0]
		if i > 0 || startBounded {
			buf = append(buf, ' ', ' ')
		}
		buf = append(buf, s[i:j]...)
		if j < len(s) || endBounded {
			buf = append(buf, ' ')
		}
		for k := 0; k+3 <= len(buf); k++ {
			out = append(out, trigram{buf[k], buf[k+1], buf[k+2]})
		}
		i = j
	}
	return out
}
