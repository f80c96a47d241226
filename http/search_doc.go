package http

import "docflow"

// The response types of search, similarity, saved searches, embeddings
// and the queue, and the documentation of their routes (/openapi.json).

type embeddingQueued struct {
	Status string `json:"status" example:"queued"`
	FileID int64  `json:"file_id"`
	TaskID string `json:"task_id"`
}

type embeddingsQueued struct {
	Status      string `json:"status" example:"queued"`
	FilesQueued int    `json:"files_queued"`
}

type pendingCount struct {
	TotalPending int `json:"total_pending"`
}

var (
	docSearch = Doc{
		Summary: "Search documents' text and metadata",
		Description: "Full-text search over file names, titles, OCR text and AI metadata of the files the caller may see, " +
			"with highlighted snippets. Filters combine with AND.",
		Params: []Param{
			{Name: "q", Required: true, Doc: "The query, 1 to 512 characters"},
			{Name: "page", Type: "integer", Default: 1, Min: 1},
			{Name: "per_page", Type: "integer", Default: 20, Min: 1, Max: 100},
			{Name: "mime_type"}, {Name: "document_type"}, {Name: "language"},
			{Name: "tags", Doc: "A tag of the AI metadata"}, {Name: "sender"},
			{Name: "text_quality", Enum: searchTextQualities},
			{Name: "date_from", Type: "integer", Doc: "Created at or after (Unix seconds)"},
			{Name: "date_to", Type: "integer", Doc: "Created at or before (Unix seconds)"},
		},
		Responses: []Response{OK(searchResponse{})},
		Examples: []Example{
			{Name: "invoice", Summary: "Documents mentioning invoice", Params: map[string]string{"q": "invoice"}},
			{Name: "no-query", Summary: "q is required", Status: 422},
		},
	}
	docSimilar = Doc{
		Summary:     "Documents similar to a file",
		Description: "By the stored embeddings only; without an embedding yet, message says so and the list is empty.",
		Params: []Param{
			{Name: "limit", Type: "integer", Default: similarDefaultLimit, Min: 1, Max: similarMaxLimit},
			{Name: "threshold", Type: "number", Default: similarDefaultThreshold, Min: 0, Max: 1, Doc: "Lowest similarity score"},
		},
		Responses: []Response{OK(similarResponse{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "similar", Summary: "Up to 5 similar documents", Params: map[string]string{"file_id": "42"}}},
	}
	docSimilarPairs = Doc{
		Summary: "Pairs of similar documents (possible duplicates)",
		Params: []Param{
			{Name: "threshold", Type: "number", Default: pairsDefaultThreshold, Min: 0, Max: 1},
			{Name: "limit", Type: "integer", Default: pairsDefaultLimit, Min: 1, Max: pairsMaxLimit},
			{Name: "page", Type: "integer", Default: 1, Min: 1},
		},
		Responses: []Response{OK(pairsResponse{})},
		Examples:  []Example{{Name: "pairs", Summary: "The most similar pairs"}},
	}
	docEmbeddingStatus = Doc{
		Summary:   "Whether a file has an embedding",
		Responses: []Response{OK(docflow.EmbeddingStatus{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "status", Summary: "A file's embedding", Params: map[string]string{"file_id": "42"}}},
	}
	docEmbeddingDiagnostics = Doc{
		Summary: "Embedding coverage of the caller's files",
		Params: []Param{
			{Name: "page", Type: "integer", Default: 1, Min: 1},
			{Name: "per_page", Type: "integer", Default: diagnosticsDefaultLimit, Min: 1, Max: diagnosticsMaxLimit},
		},
		Responses: []Response{OK(diagnosticsResponse{})},
		Examples:  []Example{{Name: "coverage", Summary: "Which files have embeddings"}},
	}
	docComputeEmbedding = Doc{
		Summary:   "Compute a file's embedding again",
		NoBody:    true,
		Responses: []Response{OK(embeddingQueued{})},
		Errors:    []int{400, 403, 404},
	}
	docComputeAllEmbeddings = Doc{
		Summary:   "Compute the embeddings of every file with text and none yet",
		NoBody:    true,
		Responses: []Response{OK(embeddingsQueued{})},
		Examples:  []Example{{Name: "all", Summary: "Queue the missing embeddings"}},
	}
	docQueueStats = Doc{
		Summary:   "The processing queue's statistics",
		Responses: []Response{OK(docflow.QueueStats{})},
		Examples:  []Example{{Name: "stats", Summary: "Queues, workers and recent processing"}},
	}
	docPendingCount = Doc{
		Summary:   "How many documents wait to be processed",
		Responses: []Response{OK(pendingCount{})},
		Examples:  []Example{{Name: "count", Summary: "The backlog"}},
	}

	docListSavedSearches = Doc{
		Summary:   "List the caller's saved searches",
		Responses: []Response{OK([]*docflow.SavedSearch{})},
		Examples:  []Example{{Name: "list", Summary: "Saved searches, oldest first"}},
	}
	docCreateSavedSearch = Doc{
		Summary:     "Save a search",
		Description: "At most 50 per user; names are unique per user. filters holds the query parameters of GET /api/files or /api/search.",
		Body:        savedSearchBody{},
		Responses:   []Response{Created(docflow.SavedSearch{})},
		Errors:      []int{409},
		Examples: []Example{{Name: "invoices", Summary: "Completed invoices",
			Body: map[string]any{"name": "Completed invoices", "filters": map[string]any{"status": "completed", "tags": "invoice"}}}},
	}
	docUpdateSavedSearch = Doc{
		Summary:   "Rename a saved search or change its filters",
		Body:      savedSearchBody{},
		Responses: []Response{OK(docflow.SavedSearch{})},
		Errors:    []int{404, 409},
		Examples: []Example{{Name: "rename", Summary: "Rename", Params: map[string]string{"id": "4"},
			Body: map[string]any{"name": "All invoices"}}},
	}
	docDeleteSavedSearch = Doc{
		Summary:   "Delete a saved search",
		Responses: []Response{NoContent()},
		Errors:    []int{404},
		Examples:  []Example{{Name: "delete", Summary: "Delete", Params: map[string]string{"id": "4"}}},
	}
)
