package docflow

import (
	"context"
	"math"
	"time"
)

// SearchDocument is what the search index holds for one file.
type SearchDocument struct {
	FileID           int64     `json:"file_id"`
	OwnerID          string    `json:"owner_id"` // "" = unclaimed
	SharedWith       []string  `json:"shared_with,omitempty"`
	OriginalFilename string    `json:"original_filename"`
	DocumentTitle    string    `json:"document_title"`
	DocumentType     string    `json:"document_type"`
	Tags             []string  `json:"tags"`
	Sender           string    `json:"sender"`
	Language         string    `json:"language"`
	MimeType         string    `json:"mime_type"`
	OCRText          string    `json:"ocr_text"`
	CreatedAt        time.Time `json:"created_at"`
	Embedding        []float32 `json:"embedding,omitempty"`
}

// SearchQuery is a full-text query with filters. Text is plain text: any
// query-syntax characters are matched literally.
type SearchQuery struct {
	Text         string
	MimeType     string
	DocumentType string
	Language     string
	Tag          string
	Sender       string
	TextQuality  string // no_text, low, medium, high
	DateFrom     *time.Time
	DateTo       *time.Time
	// VisibleTo keeps the documents it lets its user see
	// (FileAccess.VisibleTo; an unclaimed document has the empty owner);
	// nil = no restriction.
	VisibleTo *Visibility
	Page      int // from 1
	PerPage   int
}

// SearchHit is one result; Formatted holds highlighted, HTML-escaped fields
// (document_title, ocr_text) with <mark> around matches.
type SearchHit struct {
	FileID           int64             `json:"file_id"`
	OriginalFilename string            `json:"original_filename"`
	DocumentTitle    string            `json:"document_title"`
	DocumentType     string            `json:"document_type"`
	Tags             []string          `json:"tags"`
	Score            float64           `json:"-"`
	Formatted        map[string]string `json:"_formatted"`
}

// SearchResult is a page of hits.
type SearchResult struct {
	Hits  []SearchHit
	Total int
	// TotalCapped reports that counting stopped early: at least Total
	// documents match (an index may cap the count of very broad queries).
	TotalCapped bool
}

// Neighbor is a document near another by embedding.
type Neighbor struct {
	FileID int64
	Score  float64 // cosine similarity clamped to [0,1]
}

// SimilarityScore is a similarity as the API shows it: the cosine
// clamped to [0, 1] and rounded to 4 decimals (NaN is 0).
func SimilarityScore(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return math.Round(min(max(v, 0), 1)*10000) / 10000
}

// SearchIndex is the full-text and vector index. Implementations: the
// embedded Bleve index and Elasticsearch (storage/search).
type SearchIndex interface {
	// Index adds or replaces documents; the returned map holds per-document
	// errors (a nil error overall with a non-empty map is a partial failure).
	Index(ctx context.Context, docs []*SearchDocument) (map[int64]error, error)
	// Delete removes documents; unknown ids are not an error.
	Delete(ctx context.Context, ids []int64) error
	Search(ctx context.Context, q SearchQuery) (*SearchResult, error)
	// Nearest returns up to k documents closest to vec (excluding the ids
	// in exclude) with score >= minScore, best first; visibleTo keeps those
	// it lets its user see, as SearchQuery.VisibleTo.
	Nearest(ctx context.Context, vec []float32, k int, minScore float64, visibleTo *Visibility, exclude ...int64) ([]Neighbor, error)
	// Ping reports whether the backend is reachable.
	Ping(ctx context.Context) error
	Close() error
}
