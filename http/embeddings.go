package http

import (
	"context"

	"github.com/valyala/fasthttp"

	"docflow"
)

// EmbeddingQueue starts runs of the compute_embedding step alone
// (actors/pipeline/steps.EmbeddingRuns).
type EmbeddingQueue interface {
	// QueueEmbeddings starts one run per file and returns the run ids by
	// file id; files that do not exist are left out.
	QueueEmbeddings(ctx context.Context, ids []int64) (map[int64]string, error)
	// FilesMissingEmbedding returns the files with OCR text and no
	// embedding; a non-nil ownerID keeps that owner's files.
	FilesMissingEmbedding(ctx context.Context, ownerID *string) ([]int64, error)
}

// EmbeddingsDeps is what the embedding computation endpoints need.
type EmbeddingsDeps struct {
	Files docflow.FileStore
	Queue EmbeddingQueue
}

// MountEmbeddings registers POST /api/files/{file_id}/compute-embedding and
// POST /api/diagnostic/compute-all-embeddings.
func (s *Server) MountEmbeddings(d EmbeddingsDeps) {
	if d.Files == nil || d.Queue == nil {
		panic("http: MountEmbeddings needs Files and Queue")
	}
	h := &embeddingHandlers{s: s, d: d}
	b := Route{Auth: AuthUser}
	s.Handle("POST", "/api/files/{file_id}/compute-embedding", b, h.compute, docComputeEmbedding)
	s.Handle("POST", "/api/diagnostic/compute-all-embeddings", b, h.computeAll, docComputeAllEmbeddings)
}

type embeddingHandlers struct {
	s *Server
	d EmbeddingsDeps
}

// compute queues the embedding of one file: 400 without OCR text.
func (h *embeddingHandlers) compute(c *fasthttp.RequestCtx) error {
	ctx := RequestContext(c)
	id, err := pathID(c, "file_id")
	if err != nil {
		return docflow.Errorf(docflow.ENOTFOUND, "File not found")
	}
	// Computing an embedding changes the file: an editor's right.
	f, err := h.s.fileByID(c, h.d.Files, id, docflow.AccessEdit)
	if err != nil {
		return err
	}
	if f.OCRText == "" {
		return docflow.Errorf(docflow.EBADREQUEST, "File %d has no OCR text yet: process it first", f.ID)
	}
	runs, err := h.d.Queue.QueueEmbeddings(ctx, []int64{f.ID})
	if err != nil {
		return err
	}
	taskID, ok := runs[f.ID]
	if !ok {
		return docflow.Errorf(docflow.ENOTFOUND, "File not found")
	}
	writeJSON(c, fasthttp.StatusOK, embeddingQueued{Status: "queued", FileID: f.ID, TaskID: taskID})
	return nil
}

// computeAll queues one run per file that has OCR text but no embedding
// (the user's own files when their view is restricted).
func (h *embeddingHandlers) computeAll(c *fasthttp.RequestCtx) error {
	ctx := RequestContext(c)
	// Computing is an edit: a user whose view is restricted computes
	// their own files' embeddings, not those shared with them or unclaimed.
	var owner *string
	if v := h.s.visibleTo(c); v != nil {
		owner = &v.UserID
	}
	ids, err := h.d.Queue.FilesMissingEmbedding(ctx, owner)
	if err != nil {
		return err
	}
	queued := 0
	// Batches keep each transaction short on a large backlog.
	const batch = 200
	for i := 0; i < len(ids); i += batch {
		runs, err := h.d.Queue.QueueEmbeddings(ctx, ids[i:min(i+batch, len(ids))])
		queued += len(runs)
		if err != nil {
			return err
		}
	}
	writeJSON(c, fasthttp.StatusOK, embeddingsQueued{Status: "queued", FilesQueued: queued})
	return nil
}
