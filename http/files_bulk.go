package http

import (
	"context"
	"strconv"

	"github.com/valyala/fasthttp"

	"docflow"
)

// This file is the files API's changes: deletion, reprocessing and
// pipeline assignment, of one file or in bulk.

// bulkIDs parses a JSON array of file ids: 422 for another body, an empty
// array or more than MaxBulkIDs ids. Duplicates are dropped.
func bulkIDs(c *fasthttp.RequestCtx) ([]int64, error) {
	return parseBulkIDs(c, false)
}

// parseBulkIDs is bulkIDs that, with allowEmpty, takes an empty array.
func parseBulkIDs(c *fasthttp.RequestCtx, allowEmpty bool) ([]int64, error) {
	var ids []int64
	if err := decodeJSON(c, &ids); err != nil {
		if docflow.ErrorCode(err) == docflow.EINVALID {
			return nil, invalid("body", "The body must be a JSON array of file ids")
		}
		return nil, err
	}
	if ids == nil {
		return nil, invalid("body", "The body must be a JSON array of file ids")
	}
	if len(ids) == 0 && !allowEmpty {
		return nil, invalid("body", "At least one file id is required")
	}
	if len(ids) > MaxBulkIDs {
		return nil, invalid("body", "At most %d file ids per request", MaxBulkIDs)
	}
	seen := make(map[int64]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// visibleFiles returns the files among ids the user may act on with need
// (the file access rule over the share roles, looked up at once); the bulk
// routes skip the others as if they did not exist.
func (h *filesHandlers) visibleFiles(c *fasthttp.RequestCtx, ids []int64, need docflow.Access) ([]*docflow.File, error) {
	files, err := h.d.Files.FindFilesByIDs(RequestContext(c), ids)
	if err != nil {
		return nil, err
	}
	access, u := h.s.fileAccess(), CurrentUser(c)
	// The roles of every file that needs one, in one query.
	var ask []int64
	for _, f := range files {
		if access.NeedsShareRole(u, f, need) {
			ask = append(ask, f.ID)
		}
	}
	roles := map[int64]string{}
	if len(ask) > 0 {
		if roles, err = h.d.Files.ShareRoles(RequestContext(c), ask, u.ID); err != nil {
			return nil, err
		}
	}
	out := files[:0]
	for _, f := range files {
		if err := access.Authorize(u, f, roles[f.ID], need); err == nil {
			out = append(out, f)
		} else if docflow.ErrorCode(err) != docflow.EFORBIDDEN {
			return nil, err
		}
	}
	return out, nil
}

func (h *filesHandlers) deletionAllowed() error {
	if !docflow.AllowFileDelete.Get(h.s.cfg.Settings) {
		return docflow.Errorf(docflow.EFORBIDDEN, "File deletion is disabled")
	}
	return nil
}

// removeBlobs deletes blobs no record references any more.
func (h *filesHandlers) removeBlobs(ctx context.Context, keys []string) {
	for _, k := range keys {
		if err := h.d.Blobs.Delete(ctx, k); err != nil {
			h.s.log.Warn().Err(err).Str("blob", k).Msg("remove blob of deleted file")
		}
	}
}

func (h *filesHandlers) delete(c *fasthttp.RequestCtx) error {
	if err := h.deletionAllowed(); err != nil {
		return err
	}
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessDelete)
	if err != nil {
		return err
	}
	if err := h.deleteFile(c, f); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, fileDeleted{Status: "success", Message: "File deleted", FileID: f.ID})
	return nil
}

// deleteFile deletes f, which the route found the user may delete: the
// record, its audit entry, and the blobs no other file references (also
// the GraphQL mutation deleteDocument's way).
func (h *filesHandlers) deleteFile(c *fasthttp.RequestCtx, f *docflow.File) error {
	ctx := RequestContext(c)
	orphans, err := h.d.Files.DeleteFile(ctx, f.ID)
	if err != nil {
		return err
	}
	h.s.auditFile(c, docflow.AuditFileDelete, f.ID, fileLabel(f)+" deleted")
	h.removeBlobs(ctx, orphans)
	return nil
}

func (h *filesHandlers) bulkDelete(c *fasthttp.RequestCtx) error {
	if err := h.deletionAllowed(); err != nil {
		return err
	}
	// NOTE: an empty list finds no files, which is a 404, as when none of
	// the ids exists.
	ids, err := parseBulkIDs(c, true)
	if err != nil {
		return err
	}
	var files []*docflow.File
	if len(ids) > 0 {
		if files, err = h.visibleFiles(c, ids, docflow.AccessDelete); err != nil {
			return err
		}
	}
	if len(files) == 0 {
		return docflow.Errorf(docflow.ENOTFOUND, "No files found")
	}
	ctx := RequestContext(c)
	keep := make([]int64, len(files))
	for i, f := range files {
		keep[i] = f.ID
	}
	deleted, orphans, err := h.d.Files.DeleteFiles(ctx, keep)
	if err != nil {
		return err
	}
	h.s.auditFiles(c, docflow.AuditFileDelete, "bulk-delete", deleted)
	h.removeBlobs(ctx, orphans)
	writeJSON(c, fasthttp.StatusOK, filesDeleted{
		Status: "success", Message: "Deleted " + strconv.Itoa(len(deleted)) + " files", DeletedIDs: deleted,
	})
	return nil
}

func (h *filesHandlers) reprocess(cloud bool) Handler {
	return func(c *fasthttp.RequestCtx) error {
		f, err := h.s.fileFor(c, h.d.Files, docflow.AccessEdit)
		if err != nil {
			return err
		}
		task, err := h.reprocessFile(c, f, cloud)
		if err != nil {
			return err
		}
		out := fileReprocessed{Status: "success", Message: "File queued for reprocessing", FileID: f.ID,
			Filename: f.OriginalFilename, TaskID: task}
		if cloud {
			out.ForceCloudOCR = true
			out.Message = "File queued for reprocessing with cloud OCR"
		}
		writeJSON(c, fasthttp.StatusOK, out)
		return nil
	}
}

// reprocessFile queues f, which the route found the user may change, for
// a new run and returns its task id (also the GraphQL mutation
// reprocess's way).
func (h *filesHandlers) reprocessFile(c *fasthttp.RequestCtx, f *docflow.File, cloud bool) (string, error) {
	ok, errs, err := h.d.Intake.Reprocess(RequestContext(c), []int64{f.ID}, docflow.ReprocessOptions{ForceCloudOCR: cloud})
	if err != nil {
		return "", err
	}
	if e := errs[f.ID]; e != nil {
		return "", e
	}
	if len(ok) != 1 {
		return "", docflow.Errorf(docflow.ENOTFOUND, "File not found")
	}
	return ok[0].TaskID, nil
}

type reprocessed struct {
	FileID   int64  `json:"file_id"`
	Filename string `json:"filename"`
	TaskID   string `json:"task_id"`
}

type fileError struct {
	FileID int64  `json:"file_id"`
	Error  string `json:"error"`
}

func (h *filesHandlers) bulkReprocess(cloud bool) Handler {
	return func(c *fasthttp.RequestCtx) error {
		ids, err := bulkIDs(c)
		if err != nil {
			return err
		}
		files, err := h.visibleFiles(c, ids, docflow.AccessEdit)
		if err != nil {
			return err
		}
		allowed := make(map[int64]bool, len(files))
		var queue []int64
		for _, f := range files {
			allowed[f.ID] = true
			queue = append(queue, f.ID)
		}
		errs := map[int64]error{}
		var ok []docflow.ReprocessResult
		if len(queue) > 0 {
			if ok, errs, err = h.d.Intake.Reprocess(RequestContext(c), queue, docflow.ReprocessOptions{ForceCloudOCR: cloud}); err != nil {
				return err
			}
		}
		processed := make([]reprocessed, 0, len(ok))
		taskIDs := make([]string, 0, len(ok))
		for _, r := range ok {
			processed = append(processed, reprocessed{FileID: r.File.ID, Filename: r.File.OriginalFilename, TaskID: r.TaskID})
			taskIDs = append(taskIDs, r.TaskID)
		}
		errList := []fileError{}
		for _, id := range ids {
			if !allowed[id] {
				errList = append(errList, fileError{FileID: id, Error: "File not found"})
			} else if e := errs[id]; e != nil {
				errList = append(errList, fileError{FileID: id, Error: docflow.ErrorMessage(e)})
			}
		}
		out := bulkReprocessed{
			Status: "success", Message: "Queued " + strconv.Itoa(len(processed)) + " files for reprocessing",
			ProcessedFiles: processed, Errors: errList, TaskIDs: taskIDs, ForceCloudOCR: cloud,
		}
		writeJSON(c, fasthttp.StatusOK, out)
		return nil
	}
}

// assignPipeline sets (or, without pipeline_id, clears) the pipeline a
// file is processed with. The pipeline must be one the user may use, as
// for a routing rule's target: their own, a system pipeline, or any for
// an administrator; another user's private pipeline is 404 like an
// unknown one.
func (h *filesHandlers) assignPipeline(c *fasthttp.RequestCtx) error {
	var pid *int64
	if v := string(c.QueryArgs().Peek("pipeline_id")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return invalid("pipeline_id", "pipeline_id must be a positive integer")
		}
		pid = &n
	}
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessEdit)
	if err != nil {
		return err
	}
	if pid != nil {
		p, err := h.d.Pipelines.FindPipelineByID(RequestContext(c), *pid)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND || (err == nil && !canSee(CurrentUser(c), p.OwnerID)) {
			return docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
		} else if err != nil {
			return err
		}
	}
	updated, err := h.d.Files.UpdateFile(RequestContext(c), f.ID, func(f *docflow.File) error {
		f.PipelineID = pid
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, pipelineAssigned{FileID: updated.ID, PipelineID: updated.PipelineID})
	return nil
}
