package bleve

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"

	"docflow"
)

// The vector log is an append-only file of put and delete records replayed on
// open. Bleve's own vector search needs faiss (cgo), so embeddings live here
// instead: in memory for the scan, in this log so a restart keeps them.
const (
	vectorMagic = "DFVEC001"
	opPut       = 1
	opDelete    = 2
	// compactSlack keeps small indexes from rewriting the log on every
	// replacement: the log is compacted only once the dead records exceed
	// both the live ones and this many.
	compactSlack = 4096
	// minScanPerWorker is the smallest share of vectors worth a goroutine;
	// below it the scheduling costs more than the arithmetic.
	minScanPerWorker = 8192
	// maxRecordSize bounds one record so a corrupt length cannot make the
	// loader allocate gigabytes.
	maxRecordSize = 64 << 20
)

var errZeroVector = errors.New("embedding has zero length")

// vectorEntry is one embedding with the visibility data Nearest filters on.
type vectorEntry struct {
	id     int64
	vec    []float32 // normalised
	owner  string
	shared []string
}

// vectorStore keeps every embedding pre-normalised in one contiguous slice, so
// cosine similarity is a dot product and the scan walks memory linearly.
type vectorStore struct {
	wmu sync.Mutex // serialises writers (log appends and compaction)

	mu     sync.RWMutex // guards the fields below for readers
	dims   int
	ids    []int64
	data   []float32
	owners []string
	shared [][]string
	slot   map[int64]int

	path    string
	f       *os.File
	sync    bool
	records int // records in the log, live or dead
}

// openVectorStore loads the log at path (creating it when missing). dims 0
// means "taken from the first vector".
func openVectorStore(path string, dims int, syncWrites bool) (*vectorStore, error) {
	s := &vectorStore{dims: dims, slot: make(map[int64]int), path: path, sync: syncWrites}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open vector log: %w", err)
	}
	s.f = f
	if err := s.load(); err != nil {
		f.Close()
		return nil, err
	}
	if s.records > 2*len(s.ids)+compactSlack {
		if err := s.compact(); err != nil {
			s.f.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *vectorStore) load() error {
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("stat vector log: %w", err)
	}
	if st.Size() == 0 {
		if _, err := s.f.Write([]byte(vectorMagic)); err != nil {
			return fmt.Errorf("write vector log header: %w", err)
		}
		return nil
	}
	r := bufio.NewReaderSize(s.f, 1<<20)
	magic := make([]byte, len(vectorMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != vectorMagic {
		return fmt.Errorf("vector log %s: not a vector log", s.path)
	}
	good := int64(len(vectorMagic))
	var hdr [8]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			break
		}
		n := binary.LittleEndian.Uint32(hdr[0:4])
		sum := binary.LittleEndian.Uint32(hdr[4:8])
		if n == 0 || n > maxRecordSize {
			break
		}
		if cap(payload) < int(n) {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			break
		}
		if crc32.ChecksumIEEE(payload) != sum {
			break
		}
		if err := s.replay(payload); err != nil {
			return fmt.Errorf("vector log %s at offset %d: %w", s.path, good, err)
		}
		good += 8 + int64(n)
		s.records++
	}
	// NOTE: a record cut short by a crash is dropped, and the file truncated
	// to the last whole record so later appends stay readable. The search
	// index is rebuilt from Postgres anyway; losing the last write is better
	// than refusing to start.
	if good < st.Size() {
		if err := s.f.Truncate(good); err != nil {
			return fmt.Errorf("truncate vector log: %w", err)
		}
	}
	if _, err := s.f.Seek(good, io.SeekStart); err != nil {
		return fmt.Errorf("seek vector log: %w", err)
	}
	return nil
}

func (s *vectorStore) replay(p []byte) error {
	if len(p) < 9 {
		return errors.New("short record")
	}
	op, id := p[0], int64(binary.LittleEndian.Uint64(p[1:9]))
	p = p[9:]
	switch op {
	case opDelete:
		s.removeLocked(id)
		return nil
	case opPut:
	default:
		return fmt.Errorf("unknown record type %d", op)
	}
	if len(p) < 4 {
		return errors.New("short record")
	}
	dims := int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	owner, p, err := readString(p)
	if err != nil {
		return err
	}
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)) {
		return errors.New("bad shared list")
	}
	p = p[w:]
	var shared []string
	for range n {
		var u string
		if u, p, err = readString(p); err != nil {
			return err
		}
		shared = append(shared, u)
	}
	if len(p) != 4*dims {
		return errors.New("vector length does not match its dimensions")
	}
	if s.dims == 0 {
		s.dims = dims
	}
	if dims != s.dims {
		return fmt.Errorf("vector has %d dimensions, index has %d", dims, s.dims)
	}
	vec := make([]float32, dims)
	for i := range vec {
		vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
	}
	s.putLocked(vectorEntry{id: id, vec: vec, owner: owner, shared: shared})
	return nil
}

func readString(p []byte) (string, []byte, error) {
	n, w := binary.Uvarint(p)
	if w <= 0 || n > uint64(len(p)-w) {
		return "", nil, errors.New("bad string")
	}
	return string(p[w : w+int(n)]), p[w+int(n):], nil
}

func appendRecord(buf []byte, e *vectorEntry, op byte, id int64) []byte {
	start := len(buf)
	buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0) // length and checksum, filled below
	buf = append(buf, op)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
	if op == opPut {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(e.vec)))
		buf = binary.AppendUvarint(buf, uint64(len(e.owner)))
		buf = append(buf, e.owner...)
		buf = binary.AppendUvarint(buf, uint64(len(e.shared)))
		for _, u := range e.shared {
			buf = binary.AppendUvarint(buf, uint64(len(u)))
			buf = append(buf, u...)
		}
		for _, v := range e.vec {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
	}
	payload := buf[start+8:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.ChecksumIEEE(payload))
	return buf
}

// normalize returns vec scaled to unit length, refusing vectors that cannot
// be (all zeros, NaN, infinities).
func normalize(vec []float32) ([]float32, error) {
	var sum float64
	for _, v := range vec {
		sum += float64(v) * float64(v)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return nil, errZeroVector
	}
	inv := 1 / math.Sqrt(sum)
	out := make([]float32, len(vec))
	for i, v := range vec {
		out[i] = float32(float64(v) * inv)
	}
	return out, nil
}

// dimensions returns the embedding dimension, 0 while unknown.
func (s *vectorStore) dimensions() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dims
}

// has reports whether id has an embedding.
func (s *vectorStore) has(id int64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.slot[id]
	return ok
}

// apply writes puts and deletes to the log, then makes them visible.
func (s *vectorStore) apply(puts []vectorEntry, dels []int64) error {
	if len(puts) == 0 && len(dels) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()

	s.mu.RLock()
	dims := s.dims
	s.mu.RUnlock()
	var buf []byte
	for i := range puts {
		if dims == 0 {
			dims = len(puts[i].vec)
		}
		if len(puts[i].vec) != dims {
			return fmt.Errorf("embedding of %d has %d dimensions, index has %d", puts[i].id, len(puts[i].vec), dims)
		}
		buf = appendRecord(buf, &puts[i], opPut, puts[i].id)
	}
	for _, id := range dels {
		buf = appendRecord(buf, nil, opDelete, id)
	}
	if s.f == nil {
		return errors.New("vector store closed")
	}
	if _, err := s.f.Write(buf); err != nil {
		return fmt.Errorf("append vector log: %w", err)
	}
	if s.sync {
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("sync vector log: %w", err)
		}
	}

	s.mu.Lock()
	if s.dims == 0 {
		s.dims = dims
	}
	for _, e := range puts {
		s.putLocked(e)
	}
	for _, id := range dels {
		s.removeLocked(id)
	}
	live := len(s.ids)
	s.mu.Unlock()
	s.records += len(puts) + len(dels)

	if s.records > 2*live+compactSlack {
		return s.compact()
	}
	return nil
}

func (s *vectorStore) putLocked(e vectorEntry) {
	if i, ok := s.slot[e.id]; ok {
		copy(s.data[i*s.dims:(i+1)*s.dims], e.vec)
		s.owners[i] = e.owner
		s.shared[i] = e.shared
		return
	}
	s.slot[e.id] = len(s.ids)
	s.ids = append(s.ids, e.id)
	s.data = append(s.data, e.vec...)
	s.owners = append(s.owners, e.owner)
	s.shared = append(s.shared, e.shared)
}

// removeLocked moves the last vector into the freed slot so the data stays
// contiguous.
func (s *vectorStore) removeLocked(id int64) {
	i, ok := s.slot[id]
	if !ok {
		return
	}
	last := len(s.ids) - 1
	if i != last {
		s.ids[i] = s.ids[last]
		copy(s.data[i*s.dims:(i+1)*s.dims], s.data[last*s.dims:])
		s.owners[i] = s.owners[last]
		s.shared[i] = s.shared[last]
		s.slot[s.ids[i]] = i
	}
	s.ids = s.ids[:last]
	s.data = s.data[:last*s.dims]
	s.owners[last] = ""
	s.owners = s.owners[:last]
	s.shared[last] = nil
	s.shared = s.shared[:last]
	delete(s.slot, id)
}

// compact rewrites the log with only the live vectors. Called with wmu held
// (or before the store is shared), so only readers run meanwhile.
func (s *vectorStore) compact() error {
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("compact vector log: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	_, _ = w.WriteString(vectorMagic)
	s.mu.RLock()
	n := len(s.ids)
	var buf []byte
	for i := range n {
		e := vectorEntry{id: s.ids[i], vec: s.data[i*s.dims : (i+1)*s.dims], owner: s.owners[i], shared: s.shared[i]}
		buf = appendRecord(buf[:0], &e, opPut, e.id)
		if _, err = w.Write(buf); err != nil {
			break
		}
	}
	s.mu.RUnlock()
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("compact vector log: %w", err)
	}
	nf, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("reopen vector log: %w", err)
	}
	s.f.Close()
	s.f = nf
	s.records = n
	return nil
}

func (s *vectorStore) close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

func (s *vectorStore) len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.ids)
}

// candidate is one scored vector during a scan.
type candidate struct {
	score float32
	id    int64
}

// worse orders candidates for the bounded heap: lower score first, and on
// equal scores the higher id, so results are deterministic.
func worse(a, b candidate) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.id > b.id
}

// topK is a bounded min-heap: its root is the worst candidate kept so far, so
// most vectors are rejected with one comparison.
type topK struct {
	k int
	h []candidate
}

func (t *topK) admits(score float32) bool {
	return len(t.h) < t.k || score >= t.h[0].score
}

func (t *topK) push(c candidate) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return
	}
	if !worse(t.h[0], c) {
		return
	}
	t.h[0] = c
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && worse(t.h[l], t.h[m]) {
			m = l
		}
		if r < len(t.h) && worse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// nearest scans every vector (exact kNN) split across GOMAXPROCS goroutines.
func (s *vectorStore) nearest(vec []float32, k int, minScore float64, visibleTo *docflow.Visibility, exclude []int64) ([]docflow.Neighbor, error) {
	if k <= 0 {
		return nil, nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := len(s.ids)
	if n == 0 {
		return nil, nil
	}
	k = min(k, n)
	if len(vec) != s.dims {
		return nil, fmt.Errorf("query vector has %d dimensions, index has %d", len(vec), s.dims)
	}
	q, err := normalize(vec)
	if err != nil {
		return nil, fmt.Errorf("query vector: %w", err)
	}
	var excluded map[int64]struct{}
	if len(exclude) > 0 {
		excluded = make(map[int64]struct{}, len(exclude))
		for _, id := range exclude {
			excluded[id] = struct{}{}
		}
	}
	// Scores are compared in float32 against a threshold nudged down by one
	// ulp-ish margin so rounding never drops a vector sitting exactly on it;
	// the exact check happens in float64 after clamping.
	floor := float32(math.Inf(-1))
	if minScore > 0 {
		floor = float32(minScore) - 1e-6
	}

	workers := min(runtime.GOMAXPROCS(0), (n+minScanPerWorker-1)/minScanPerWorker)
	workers = max(workers, 1)
	heaps := make([]topK, workers)
	scan := func(w int) {
		lo, hi := w*n/workers, (w+1)*n/workers
		t := &heaps[w]
		t.k = k
		t.h = make([]candidate, 0, k)
		d := s.dims
		for i := lo; i < hi; i++ {
			sc := dot(q, s.data[i*d:(i+1)*d])
			if sc < floor || !t.admits(sc) {
				continue
			}
			id := s.ids[i]
			if excluded != nil {
				if _, ok := excluded[id]; ok {
					continue
				}
			}
			if visibleTo != nil && !sees(visibleTo, s.owners[i], s.shared[i]) {
				continue
			}
			t.push(candidate{score: sc, id: id})
		}
	}
	if workers == 1 {
		scan(0)
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() { scan(w) })
		}
		wg.Wait()
	}

	var all []candidate
	for _, t := range heaps {
		all = append(all, t.h...)
	}
	slices.SortFunc(all, func(a, b candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]docflow.Neighbor, 0, min(k, len(all)))
	for _, c := range all {
		if len(out) == k {
			break
		}
		score := min(max(float64(c.score), 0), 1)
		if score < minScore {
			continue
		}
		out = append(out, docflow.Neighbor{FileID: c.id, Score: score})
	}
	return out, nil
}

// sees is docflow.Visibility.Sees over a vector's owner ("" = unclaimed)
// and the users its document is shared with.
func sees(v *docflow.Visibility, owner string, shared []string) bool {
	if owner == "" {
		return v.Unclaimed
	}
	return v.UserID != "" && (owner == v.UserID || slices.Contains(shared, v.UserID))
}
