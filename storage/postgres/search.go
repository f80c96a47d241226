package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"docflow"
	"docflow/internal/ttlcache"
)

// SearchStore implements docflow.SearchStore: saved searches, the
// documents the indexer feeds the search index, stored embeddings and
// similarity pairs.
type SearchStore struct {
	db     *DB
	counts *ttlcache.Cache[string, int]
}

var _ docflow.SearchStore = (*SearchStore)(nil)

// NewSearchStore returns a SearchStore on db.
func NewSearchStore(db *DB) *SearchStore {
	if db == nil {
		panic("postgres: NewSearchStore needs a DB")
	}
	return &SearchStore{db: db, counts: newCountCache(db.Now)}
}

// DropCaches forgets the counts it cached (a system reset).
func (s *SearchStore) DropCaches() { s.counts.Purge() }

// visibleCond is the condition on files alias a of the files v lets its
// user see (docflow.Visibility.Sees), with its parameter appended to
// args.
func visibleCond(a string, v *docflow.Visibility, args []any) (string, []any) {
	var or []string
	if v.UserID != "" {
		args = append(args, v.UserID)
		p := "$" + strconv.Itoa(len(args))
		or = append(or, a+`.owner_id = `+p, `EXISTS (SELECT 1 FROM shares sh WHERE sh.file_id = `+a+`.id AND sh.shared_with_user_id = `+p+`)`)
	}
	if v.Unclaimed {
		or = append(or, a+`.owner_id IS NULL`)
	}
	if len(or) == 0 {
		return `false`, args
	}
	return `(` + strings.Join(or, ` OR `) + `)`, args
}

// ---- Saved searches -------------------------------------------------------

const savedCols = `id, owner_id, name, filters, created_at, updated_at`

func scanSaved(row pgx.Row) (*docflow.SavedSearch, error) {
	var s docflow.SavedSearch
	var filters []byte
	if err := row.Scan(&s.ID, &s.OwnerID, &s.Name, &filters, &s.CreatedAt, &s.UpdatedAt); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(filters, &s.Filters); err != nil {
		return nil, fmt.Errorf("saved search %d filters: %w", s.ID, err)
	}
	if s.Filters == nil {
		s.Filters = map[string]any{}
	}
	return &s, nil
}

// FindSavedSearches returns the owner's saved searches, oldest first.
func (s *SearchStore) FindSavedSearches(ctx context.Context, owner string) ([]*docflow.SavedSearch, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+savedCols+` FROM saved_searches WHERE owner_id=$1 ORDER BY created_at, id`, owner)
	if err != nil {
		return nil, fmt.Errorf("find saved searches: %w", err)
	}
	defer rows.Close()
	out := []*docflow.SavedSearch{}
	for rows.Next() {
		ss, err := scanSaved(rows)
		if err != nil {
			return nil, fmt.Errorf("find saved searches: %w", err)
		}
		out = append(out, ss)
	}
	return out, rows.Err()
}

func savedNameConflict(name string) error {
	return docflow.Errorf(docflow.ECONFLICT, "A saved search named %q already exists", name)
}

// lockOwner serialises one owner's saved-search writes, so the count check
// and the insert cannot interleave with another request's.
func lockOwner(ctx context.Context, tx pgx.Tx, owner string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('saved_searches:' || $1, 0))`, owner)
	return err
}

// CreateSavedSearch stores ss; ECONFLICT at the limit or on a taken name.
func (s *SearchStore) CreateSavedSearch(ctx context.Context, ss *docflow.SavedSearch) error {
	filters, err := json.Marshal(ss.Filters)
	if err != nil {
		return fmt.Errorf("create saved search: filters: %w", err)
	}
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if err := lockOwner(ctx, tx, ss.OwnerID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM saved_searches WHERE owner_id=$1`, ss.OwnerID).Scan(&n); err != nil {
			return err
		}
		if n >= docflow.MaxSavedSearches {
			return docflow.Errorf(docflow.ECONFLICT, "Saved search limit of %d reached; delete one first", docflow.MaxSavedSearches)
		}
		now := s.db.Now()
		return tx.QueryRow(ctx, `INSERT INTO saved_searches (owner_id, name, filters, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $4) RETURNING id, created_at, updated_at`, ss.OwnerID, ss.Name, filters, now).
			Scan(&ss.ID, &ss.CreatedAt, &ss.UpdatedAt)
	})
	if isUniqueViolation(err) {
		return savedNameConflict(ss.Name)
	}
	if err != nil && docflow.ErrorCode(err) == docflow.EINTERNAL {
		return fmt.Errorf("create saved search: %w", err)
	}
	return err
}

// UpdateSavedSearch runs fn on the owner's saved search and saves it.
func (s *SearchStore) UpdateSavedSearch(ctx context.Context, owner string, id int64, fn func(*docflow.SavedSearch) error) (*docflow.SavedSearch, error) {
	var out *docflow.SavedSearch
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		ss, err := scanSaved(tx.QueryRow(ctx, `SELECT `+savedCols+` FROM saved_searches WHERE id=$1 AND owner_id=$2 FOR UPDATE`, id, owner))
		if err != nil {
			return notFound(err, "Saved search not found")
		}
		if err := fn(ss); err != nil {
			return err
		}
		filters, err := json.Marshal(ss.Filters)
		if err != nil {
			return fmt.Errorf("filters: %w", err)
		}
		ss.UpdatedAt = s.db.Now()
		if _, err := tx.Exec(ctx, `UPDATE saved_searches SET name=$2, filters=$3, updated_at=$4 WHERE id=$1`,
			id, ss.Name, filters, ss.UpdatedAt); err != nil {
			if isUniqueViolation(err) {
				return savedNameConflict(ss.Name)
			}
			return err
		}
		out = ss
		return nil
	})
	if err != nil {
		if docflow.ErrorCode(err) == docflow.EINTERNAL {
			return nil, fmt.Errorf("update saved search %d: %w", id, err)
		}
		return nil, err
	}
	return out, nil
}

// DeleteSavedSearch removes the owner's saved search.
func (s *SearchStore) DeleteSavedSearch(ctx context.Context, owner string, id int64) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM saved_searches WHERE id=$1 AND owner_id=$2`, id, owner)
	if err != nil {
		return fmt.Errorf("delete saved search %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "Saved search not found")
	}
	return nil
}

// ---- Index documents ------------------------------------------------------

// searchDocCols reads what the index holds of a file. Title, type, sender
// and language fall back to the AI metadata when the columns are empty.
const searchDocCols = `f.id, f.status, COALESCE(f.owner_id, ''), f.original_filename,
	COALESCE(NULLIF(f.document_title, ''), f.ai_metadata->>'title', ''),
	COALESCE(f.ai_metadata->>'document_type', ''), f.tags,
	CASE WHEN jsonb_typeof(f.ai_metadata->'tags') = 'array' THEN f.ai_metadata->'tags' ELSE '[]'::jsonb END,
	COALESCE(f.ai_metadata->>'sender', ''),
	COALESCE(NULLIF(f.language, ''), f.ai_metadata->>'language', ''),
	f.mime_type, f.ocr_text, f.created_at, e.vector,
	ARRAY(SELECT sh.shared_with_user_id FROM shares sh WHERE sh.file_id = f.id ORDER BY sh.shared_with_user_id)`

const searchDocFrom = ` FROM files f LEFT JOIN file_embeddings e ON e.file_id = f.id`

func scanSearchDoc(row pgx.Row) (*docflow.SearchDocument, string, error) {
	var d docflow.SearchDocument
	var status string
	var metaTags []byte
	var vec []float32
	if err := row.Scan(&d.FileID, &status, &d.OwnerID, &d.OriginalFilename, &d.DocumentTitle, &d.DocumentType,
		&d.Tags, &metaTags, &d.Sender, &d.Language, &d.MimeType, &d.OCRText, &d.CreatedAt, &vec, &d.SharedWith); err != nil {
		return nil, "", err
	}
	if len(d.Tags) == 0 {
		var tags []any
		if err := json.Unmarshal(metaTags, &tags); err == nil {
			for _, t := range tags {
				if s, ok := t.(string); ok && s != "" {
					d.Tags = append(d.Tags, s)
				}
			}
		}
	}
	if d.Tags == nil {
		d.Tags = []string{}
	}
	if len(d.SharedWith) == 0 {
		d.SharedWith = nil
	}
	if len(vec) > 0 {
		d.Embedding = vec
	}
	return &d, status, nil
}

// SearchDocuments returns the index documents of the completed files among ids.
func (s *SearchStore) SearchDocuments(ctx context.Context, ids []int64) (map[int64]*docflow.SearchDocument, error) {
	out := make(map[int64]*docflow.SearchDocument, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+searchDocCols+searchDocFrom+` WHERE f.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("search documents: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		d, status, err := scanSearchDoc(rows)
		if err != nil {
			return nil, fmt.Errorf("search documents: %w", err)
		}
		if status == docflow.StatusCompleted {
			out[d.FileID] = d
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search documents: %w", err)
	}
	return out, nil
}

// ScanSearchDocuments reads the next limit files after afterID.
func (s *SearchStore) ScanSearchDocuments(ctx context.Context, afterID int64, limit int) ([]*docflow.SearchDocument, int64, error) {
	if limit <= 0 {
		limit = 500
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+searchDocCols+searchDocFrom+` WHERE f.id > $1 ORDER BY f.id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("scan search documents: %w", err)
	}
	defer rows.Close()
	var out []*docflow.SearchDocument
	var last int64
	for rows.Next() {
		d, status, err := scanSearchDoc(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("scan search documents: %w", err)
		}
		last = d.FileID
		if status == docflow.StatusCompleted {
			out = append(out, d)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("scan search documents: %w", err)
	}
	return out, last, nil
}

// MaxFileID returns the highest id the files sequence has handed out (0
// when none), so a rebuild can clear index documents of files deleted
// after the last one still present.
func (s *SearchStore) MaxFileID(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.Pool.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM files_id_seq`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("max file id: %w", err)
	}
	return n, nil
}

// FileSummaries returns the existing (and visible) files among ids.
func (s *SearchStore) FileSummaries(ctx context.Context, ids []int64, visibleTo *docflow.Visibility) (map[int64]*docflow.FileSummary, error) {
	out := make(map[int64]*docflow.FileSummary, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	q := `SELECT f.id, f.original_filename, f.document_title, f.mime_type, f.created_at FROM files f WHERE f.id = ANY($1)`
	args := []any{ids}
	if visibleTo != nil {
		var cond string
		cond, args = visibleCond("f", visibleTo, args)
		q += ` AND ` + cond
	}
	rows, err := s.db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("file summaries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var fs docflow.FileSummary
		if err := rows.Scan(&fs.FileID, &fs.OriginalFilename, &fs.DocumentTitle, &fs.MimeType, &fs.CreatedAt); err != nil {
			return nil, fmt.Errorf("file summaries: %w", err)
		}
		out[fs.FileID] = &fs
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("file summaries: %w", err)
	}
	return out, nil
}

// ---- Embeddings and pairs -------------------------------------------------

// FindEmbedding returns ENOTFOUND when the file has no embedding.
func (s *SearchStore) FindEmbedding(ctx context.Context, fileID int64) (*docflow.Embedding, error) {
	var e docflow.Embedding
	err := s.db.Pool.QueryRow(ctx, `SELECT file_id, dimensions, model, vector, updated_at FROM file_embeddings WHERE file_id=$1`, fileID).
		Scan(&e.FileID, &e.Dimensions, &e.Model, &e.Vector, &e.UpdatedAt)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, docflow.Errorf(docflow.ENOTFOUND, "No embedding for file %d", fileID)
		}
		return nil, fmt.Errorf("find embedding %d: %w", fileID, err)
	}
	return &e, nil
}

// PutEmbedding stores or replaces a file's embedding.
func (s *SearchStore) PutEmbedding(ctx context.Context, e *docflow.Embedding) error {
	if len(e.Vector) == 0 {
		return docflow.Errorf(docflow.EINVALID, "Embedding of file %d is empty", e.FileID)
	}
	e.Dimensions = len(e.Vector)
	e.UpdatedAt = s.db.Now()
	_, err := s.db.Pool.Exec(ctx, `INSERT INTO file_embeddings (file_id, dimensions, model, vector, updated_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (file_id) DO UPDATE SET dimensions=EXCLUDED.dimensions, model=EXCLUDED.model,
			vector=EXCLUDED.vector, updated_at=EXCLUDED.updated_at`, e.FileID, e.Dimensions, e.Model, e.Vector, e.UpdatedAt)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23503" {
			return docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		return fmt.Errorf("put embedding %d: %w", e.FileID, err)
	}
	s.counts.Purge()
	return nil
}

// RoundScore rounds a similarity to the 4 decimals the API shows; pairs are
// stored rounded so that a threshold filter and the shown score agree.
func RoundScore(v float64) float64 {
	v = min(max(v, 0), 1)
	return math.Round(v*10000) / 10000
}

// ReplaceSimilarityPairs replaces the stored pairs of every file of the map
// with its neighbours, in one transaction. Pairs naming a file that no
// longer exists are skipped.
func (s *SearchStore) ReplaceSimilarityPairs(ctx context.Context, neighbours map[int64][]docflow.Neighbor) error {
	if len(neighbours) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(neighbours))
	type key struct{ a, b int64 }
	pairs := map[key]float64{}
	for id, ns := range neighbours {
		ids = append(ids, id)
		for _, n := range ns {
			if n.FileID == id || n.FileID <= 0 {
				continue
			}
			k := key{min(id, n.FileID), max(id, n.FileID)}
			pairs[k] = max(pairs[k], RoundScore(n.Score))
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	as := make([]int64, 0, len(pairs))
	bs := make([]int64, 0, len(pairs))
	scores := make([]float64, 0, len(pairs))
	for k, sc := range pairs {
		as, bs, scores = append(as, k.a), append(bs, k.b), append(scores, sc)
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM similarity_pairs WHERE file_a = ANY($1) OR file_b = ANY($1)`, ids); err != nil {
			return err
		}
		if len(as) == 0 {
			return nil
		}
		// Rows are inserted in key order so that two writers touching the
		// same pairs take their locks in the same order.
		_, err := tx.Exec(ctx, `INSERT INTO similarity_pairs (file_a, file_b, score)
			SELECT p.a, p.b, p.s FROM unnest($1::bigint[], $2::bigint[], $3::float8[]) AS p(a, b, s)
			WHERE EXISTS (SELECT 1 FROM files WHERE id = p.a) AND EXISTS (SELECT 1 FROM files WHERE id = p.b)
			ORDER BY p.a, p.b
			ON CONFLICT (file_a, file_b) DO UPDATE SET score = EXCLUDED.score`, as, bs, scores)
		return err
	})
	if err != nil {
		return fmt.Errorf("replace similarity pairs of %d files: %w", len(ids), err)
	}
	s.counts.Purge()
	return nil
}

// FindSimilarityPairs returns a page of pairs with score >= MinScore.
func (s *SearchStore) FindSimilarityPairs(ctx context.Context, f docflow.SimilarityPairFilter) ([]*docflow.SimilarityPair, int, error) {
	per := f.PerPage
	if per <= 0 {
		per = 50
	}
	page := max(f.Page, 1)
	where := ` WHERE p.score >= $1`
	args := []any{f.MinScore}
	if f.VisibleTo != nil {
		// Both conditions take the same parameter.
		cb, _ := visibleCond("fb", f.VisibleTo, []any{f.MinScore})
		var ca string
		ca, args = visibleCond("fa", f.VisibleTo, args)
		where += ` AND EXISTS (SELECT 1 FROM files fa WHERE fa.id = p.file_a AND ` + ca + `)` +
			` AND EXISTS (SELECT 1 FROM files fb WHERE fb.id = p.file_b AND ` + cb + `)`
	}
	key := "pairs" + cacheKey(where, args)
	total, cached := s.counts.Get(key)

	n := len(args)
	offset := int64(page-1) * int64(per)
	q := `SELECT p.file_a, p.file_b, p.score,
			fa.original_filename, fa.document_title, fa.mime_type, fa.created_at,
			fb.original_filename, fb.document_title, fb.mime_type, fb.created_at
		FROM (SELECT p.file_a, p.file_b, p.score FROM similarity_pairs p` + where + `
			ORDER BY p.score DESC, p.file_a, p.file_b LIMIT $` + strconv.Itoa(n+1) + ` OFFSET $` + strconv.Itoa(n+2) + `) p
		JOIN files fa ON fa.id = p.file_a JOIN files fb ON fb.id = p.file_b
		ORDER BY p.score DESC, p.file_a, p.file_b`
	batch := &pgx.Batch{}
	batch.Queue(q, append(append([]any(nil), args...), per, offset)...)
	if !cached {
		batch.Queue(`SELECT count(*) FROM similarity_pairs p`+where, args...)
	}
	br := s.db.Pool.SendBatch(ctx, batch)
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		return nil, 0, fmt.Errorf("find similarity pairs: %w", err)
	}
	out := []*docflow.SimilarityPair{}
	for rows.Next() {
		var p docflow.SimilarityPair
		if err := rows.Scan(&p.FileA.FileID, &p.FileB.FileID, &p.Score,
			&p.FileA.OriginalFilename, &p.FileA.DocumentTitle, &p.FileA.MimeType, &p.FileA.CreatedAt,
			&p.FileB.OriginalFilename, &p.FileB.DocumentTitle, &p.FileB.MimeType, &p.FileB.CreatedAt); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("find similarity pairs: %w", err)
		}
		out = append(out, &p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("find similarity pairs: %w", err)
	}
	if !cached {
		if err := br.QueryRow().Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("count similarity pairs: %w", err)
		}
		s.counts.Add(key, total)
	}
	return out, total, nil
}

// EmbeddingCoverage counts files and files with an embedding.
func (s *SearchStore) EmbeddingCoverage(ctx context.Context, visibleTo *docflow.Visibility) (docflow.EmbeddingCoverage, error) {
	var c docflow.EmbeddingCoverage
	where, args := "", []any{}
	if visibleTo != nil {
		var cond string
		cond, args = visibleCond("f", visibleTo, args)
		where = ` WHERE ` + cond
	}
	key := "coverage" + cacheKey(where, args)
	if v, ok := s.counts.Get(key + "/total"); ok {
		if w, ok := s.counts.Get(key + "/emb"); ok {
			return docflow.EmbeddingCoverage{TotalFiles: v, FilesWithEmbedding: w}, nil
		}
	}
	// NOTE: two counts rather than a LEFT JOIN: each is an index-only
	// scan, where the join would read both tables whole.
	batch := &pgx.Batch{}
	batch.Queue(`SELECT count(*) FROM files f`+where, args...)
	if visibleTo != nil {
		batch.Queue(`SELECT count(*) FROM file_embeddings e JOIN files f ON f.id = e.file_id`+where, args...)
	} else {
		batch.Queue(`SELECT count(*) FROM file_embeddings e`)
	}
	br := s.db.Pool.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&c.TotalFiles); err != nil {
		return c, fmt.Errorf("embedding coverage: %w", err)
	}
	if err := br.QueryRow().Scan(&c.FilesWithEmbedding); err != nil {
		return c, fmt.Errorf("embedding coverage: %w", err)
	}
	s.counts.Add(key+"/total", c.TotalFiles)
	s.counts.Add(key+"/emb", c.FilesWithEmbedding)
	return c, nil
}

// EmbeddingStatus reports one file's OCR text and embedding.
func (s *SearchStore) EmbeddingStatus(ctx context.Context, fileID int64, visibleTo *docflow.Visibility) (*docflow.EmbeddingStatus, error) {
	q := `SELECT f.id, char_length(f.ocr_text), COALESCE(e.dimensions, 0), e.file_id IS NOT NULL
		FROM files f LEFT JOIN file_embeddings e ON e.file_id = f.id WHERE f.id = $1`
	args := []any{fileID}
	if visibleTo != nil {
		var cond string
		cond, args = visibleCond("f", visibleTo, args)
		q += ` AND ` + cond
	}
	var st docflow.EmbeddingStatus
	err := s.db.Pool.QueryRow(ctx, q, args...).Scan(&st.FileID, &st.OCRTextLength, &st.EmbeddingDimensions, &st.HasEmbedding)
	if err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, docflow.Errorf(docflow.ENOTFOUND, "File not found")
		}
		return nil, fmt.Errorf("embedding status %d: %w", fileID, err)
	}
	st.HasOCRText = st.OCRTextLength > 0
	return &st, nil
}

// EmbeddingDiagnostics returns the coverage counts and a page of files,
// newest first. files_missing_embedding counts the files that have OCR text
// but no embedding (what compute-all-embeddings would queue).
func (s *SearchStore) EmbeddingDiagnostics(ctx context.Context, visibleTo *docflow.Visibility, page, perPage int) (*docflow.EmbeddingDiagnostics, error) {
	page = max(page, 1)
	if perPage <= 0 {
		perPage = 100
	}
	where, args := "", []any{}
	if visibleTo != nil {
		var cond string
		cond, args = visibleCond("f", visibleTo, args)
		where = ` WHERE ` + cond
	}
	out := &docflow.EmbeddingDiagnostics{Files: []*docflow.EmbeddingFileStatus{}}
	n := len(args)
	batch := &pgx.Batch{}
	batch.Queue(`SELECT count(*), count(*) FILTER (WHERE f.ocr_text <> ''), count(e.file_id),
			count(*) FILTER (WHERE f.ocr_text <> '' AND e.file_id IS NULL)
		FROM files f LEFT JOIN file_embeddings e ON e.file_id = f.id`+where, args...)
	batch.Queue(`SELECT f.id, f.original_filename, f.ocr_text <> '', e.file_id IS NOT NULL
		FROM files f LEFT JOIN file_embeddings e ON e.file_id = f.id`+where+`
		ORDER BY f.id DESC LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2),
		append(append([]any(nil), args...), perPage, int64(page-1)*int64(perPage))...)
	br := s.db.Pool.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&out.TotalFiles, &out.FilesWithOCRText, &out.FilesWithEmbedding, &out.FilesMissingEmbedding); err != nil {
		return nil, fmt.Errorf("embedding diagnostics: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return nil, fmt.Errorf("embedding diagnostics: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var fs docflow.EmbeddingFileStatus
		if err := rows.Scan(&fs.FileID, &fs.OriginalFilename, &fs.HasOCRText, &fs.HasEmbedding); err != nil {
			return nil, fmt.Errorf("embedding diagnostics: %w", err)
		}
		out.Files = append(out.Files, &fs)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("embedding diagnostics: %w", err)
	}
	return out, nil
}
