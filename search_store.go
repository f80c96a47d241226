package docflow

import (
	"context"
	"time"
)

// MaxSavedSearches is how many saved searches one user may keep.
const MaxSavedSearches = 50

// SavedSearchFilterKeys are the filter keys a saved search keeps: the files
// view's, the search view's and the shared ones. Other keys are dropped.
var SavedSearchFilterKeys = []string{
	"search", "mime_type", "status", "storage_provider", "sort_by", "sort_order",
	"q", "document_type", "language", "sender", "text_quality",
	"tags", "date_from", "date_to",
}

// SavedSearch is a named set of filters of one user.
type SavedSearch struct {
	ID        int64          `json:"id"`
	OwnerID   string         `json:"-"`
	Name      string         `json:"name"`
	Filters   map[string]any `json:"filters"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// SavedSearchStore stores saved searches.
type SavedSearchStore interface {
	// FindSavedSearches returns the owner's saved searches, oldest first.
	FindSavedSearches(ctx context.Context, owner string) ([]*SavedSearch, error)
	// CreateSavedSearch stores s (ID and timestamps are set). Returns
	// ECONFLICT when the owner already has MaxSavedSearches or one of the
	// same name.
	CreateSavedSearch(ctx context.Context, s *SavedSearch) error
	// UpdateSavedSearch runs fn on the owner's saved search inside one
	// transaction and saves it. ENOTFOUND when it does not exist or belongs
	// to someone else; ECONFLICT when the new name is taken.
	UpdateSavedSearch(ctx context.Context, owner string, id int64, fn func(*SavedSearch) error) (*SavedSearch, error)
	// DeleteSavedSearch returns ENOTFOUND when it does not exist or belongs
	// to someone else.
	DeleteSavedSearch(ctx context.Context, owner string, id int64) error
}

// Embedding is the stored vector of one file.
type Embedding struct {
	FileID     int64     `json:"file_id"`
	Dimensions int       `json:"dimensions"`
	Model      string    `json:"model"`
	Vector     []float32 `json:"-"`
	UpdatedAt  time.Time `json:"updated_at"`
}

// FileSummary is the part of a file record that search and similarity
// results show.
type FileSummary struct {
	FileID           int64     `json:"file_id"`
	OriginalFilename string    `json:"original_filename"`
	DocumentTitle    *string   `json:"document_title"`
	MimeType         string    `json:"mime_type"`
	CreatedAt        time.Time `json:"created_at"`
}

// SimilarityPair is two files whose embeddings are close; FileA has the
// lower id.
type SimilarityPair struct {
	FileA FileSummary `json:"file_a"`
	FileB FileSummary `json:"file_b"`
	Score float64     `json:"similarity_score"`
}

// SimilarityPairFilter selects a page of stored pairs.
type SimilarityPairFilter struct {
	MinScore float64
	// VisibleTo keeps the pairs whose two files it lets its user see
	// (FileAccess.VisibleTo); nil = all.
	VisibleTo *Visibility
	Page      int // from 1
	PerPage   int
}

// EmbeddingCoverage counts the files that have an embedding.
type EmbeddingCoverage struct {
	TotalFiles         int `json:"total_files"`
	FilesWithEmbedding int `json:"files_with_embedding"`
}

// EmbeddingStatus reports one file's text and embedding.
type EmbeddingStatus struct {
	FileID              int64 `json:"file_id"`
	HasEmbedding        bool  `json:"has_embedding"`
	EmbeddingDimensions int   `json:"embedding_dimensions"` // 0 without an embedding
	HasOCRText          bool  `json:"has_ocr_text"`
	OCRTextLength       int   `json:"ocr_text_length"`
}

// EmbeddingFileStatus is one row of the embedding diagnostics.
type EmbeddingFileStatus struct {
	FileID           int64  `json:"file_id"`
	OriginalFilename string `json:"original_filename"`
	HasOCRText       bool   `json:"has_ocr_text"`
	HasEmbedding     bool   `json:"has_embedding"`
}

// EmbeddingDiagnostics is the embedding coverage overview.
type EmbeddingDiagnostics struct {
	TotalFiles            int                    `json:"total_files"`
	FilesWithOCRText      int                    `json:"files_with_ocr_text"`
	FilesWithEmbedding    int                    `json:"files_with_embedding"`
	FilesMissingEmbedding int                    `json:"files_missing_embedding"`
	Files                 []*EmbeddingFileStatus `json:"files"`
}

// SearchStore is what search, the indexer and similarity read from and
// write to the system of record.
type SearchStore interface {
	SavedSearchStore

	// SearchDocuments returns the index documents (with embedding and
	// shares) of the completed files among ids, by id. Files that do not
	// exist or are not completed are absent.
	SearchDocuments(ctx context.Context, ids []int64) (map[int64]*SearchDocument, error)
	// ScanSearchDocuments reads the next limit files with id > afterID in
	// id order and returns the index documents of the completed ones and
	// the highest id read (0 when there were none).
	ScanSearchDocuments(ctx context.Context, afterID int64, limit int) ([]*SearchDocument, int64, error)
	// FileSummaries returns the files among ids that exist and, when
	// visibleTo is set, that it lets its user see.
	FileSummaries(ctx context.Context, ids []int64, visibleTo *Visibility) (map[int64]*FileSummary, error)

	// FindEmbedding returns ENOTFOUND when the file has no embedding.
	FindEmbedding(ctx context.Context, fileID int64) (*Embedding, error)
	// PutEmbedding stores (or replaces) a file's embedding. ENOTFOUND when
	// the file does not exist.
	PutEmbedding(ctx context.Context, e *Embedding) error
	// ReplaceSimilarityPairs makes neighbours[id] the stored pairs of each
	// file id of the map: its earlier pairs are removed first.
	ReplaceSimilarityPairs(ctx context.Context, neighbours map[int64][]Neighbor) error
	// FindSimilarityPairs returns a page of pairs, best first, and the total.
	FindSimilarityPairs(ctx context.Context, f SimilarityPairFilter) ([]*SimilarityPair, int, error)
	// EmbeddingCoverage counts the files (visible to visibleTo, when set)
	// and those of them with an embedding.
	EmbeddingCoverage(ctx context.Context, visibleTo *Visibility) (EmbeddingCoverage, error)
	// EmbeddingStatus returns ENOTFOUND when the file does not exist or is
	// not visible to visibleTo.
	EmbeddingStatus(ctx context.Context, fileID int64, visibleTo *Visibility) (*EmbeddingStatus, error)
	// EmbeddingDiagnostics returns the counts and one page of per-file rows
	// (newest first).
	EmbeddingDiagnostics(ctx context.Context, visibleTo *Visibility, page, perPage int) (*EmbeddingDiagnostics, error)
}
