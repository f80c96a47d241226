package http

import (
	"context"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// FilesDeps are the dependencies of the files API.
type FilesDeps struct {
	Files  docflow.FileStore
	Blobs  docflow.BlobStore
	Intake docflow.IntakeService
	// Pipelines finds the pipeline assign-pipeline names.
	Pipelines pipelineFinder
	// Destinations, when set, gives a file's record its deliveries to
	// storage destinations and serves send-to.
	Destinations docflow.DestinationStore
	// Edits and Announce, when both are set, serve PATCH
	// /api/files/{file_id}/metadata: the edit is saved by Edits with its
	// document.updated event, built by Announce (streams.DocumentUpdated).
	Edits    fileEditor
	Announce docflow.DocumentEventEncoder
}

// pipelineFinder finds a pipeline by id (docflow.PipelineStore).
type pipelineFinder interface {
	// FindPipelineByID returns the pipeline, or ENOTFOUND.
	FindPipelineByID(ctx context.Context, id int64) (*docflow.Pipeline, error)
}

// MaxBulkIDs caps the ids of one bulk request.
const MaxBulkIDs = 10_000

// MountFiles registers the files API. Routes address a file as {file_id},
// the name every /api/files/{…} route of the server must share.
func (s *Server) MountFiles(d FilesDeps) {
	if d.Files == nil || d.Blobs == nil || d.Intake == nil || d.Pipelines == nil {
		panic("http: MountFiles needs Files, Blobs, Intake and Pipelines")
	}
	h := &filesHandlers{s: s, d: d}
	s.files = h
	b := Route{Auth: AuthUser, Limit: LimitDefault}
	stream := Route{Auth: AuthUser, Limit: LimitDefault, Timeout: 10 * time.Minute}
	s.Handle("GET", "/api/files", b, h.list, docListFiles)
	s.Handle("GET", "/api/files/{file_id}", b, h.get, docGetFile)
	s.Handle("GET", "/api/files/{file_id}/metadata", b, h.metadata, docFileMetadata)
	if d.Edits != nil && d.Announce != nil {
		s.Handle("PATCH", "/api/files/{file_id}/metadata", b, h.editMetadata, docEditMetadata)
	}
	s.Handle("GET", "/api/files/{file_id}/preview", stream, h.content(true), docPreview)
	s.Handle("GET", "/api/files/{file_id}/download", stream, h.content(false), docDownload)
	s.Handle("DELETE", "/api/files/{file_id}", b, h.delete, docDeleteFile)
	s.Handle("POST", "/api/files/bulk-delete", b, h.bulkDelete, docBulkDelete)
	s.Handle("POST", "/api/files/{file_id}/reprocess", b, h.reprocess(false), docReprocess)
	s.Handle("POST", "/api/files/{file_id}/reprocess-with-cloud-ocr", b, h.reprocess(true), docReprocessCloud)
	s.Handle("POST", "/api/files/bulk-reprocess", b, h.bulkReprocess(false), docBulkReprocess)
	s.Handle("POST", "/api/files/bulk-reprocess-cloud-ocr", b, h.bulkReprocess(true), docBulkReprocessCloud)
	s.Handle("POST", "/api/files/bulk-download", stream, h.bulkDownload, docBulkDownload)
	s.Handle("POST", "/api/files/{file_id}/assign-pipeline", b, h.assignPipeline, docAssignPipeline)
	if d.Destinations != nil {
		s.Handle("POST", "/api/files/{file_id}/send-to/{integration_id}", b, h.sendTo, docSendTo)
	}
}

type filesHandlers struct {
	s *Server
	d FilesDeps
}

func (s *Server) multiUser() bool { return s.fileAccess().MultiUser }

// fileAccess is the file access rule as the settings state it now.
func (s *Server) fileAccess() docflow.FileAccess { return docflow.FileAccessFrom(s.cfg.Settings) }

// visibleTo is the filter of the files the current user may see that
// listings, search and similarity queries take (docflow.FileAccess's view
// rule as a query filter); nil when every file is visible (single-user
// mode, administrators).
func (s *Server) visibleTo(c *fasthttp.RequestCtx) *docflow.Visibility {
	return s.fileAccess().VisibleTo(CurrentUser(c))
}

// fileLoader finds a file and the role a share gives a user on it
// (docflow.FileStore).
type fileLoader interface {
	// FindFileByID returns the file, or ENOTFOUND.
	FindFileByID(ctx context.Context, id int64) (*docflow.File, error)
	// ShareRole returns the role of userID's share of the file, "" for
	// none.
	ShareRole(ctx context.Context, fileID int64, userID string) (string, error)
}

// fileFor loads the file the route's {file_id} names and checks that the
// current user may do need with it: every /api/files/{file_id}… route
// that acts on one file starts here. Errors: EINVALID for a malformed id,
// ENOTFOUND for an unknown file, and the file access rule's refusal
// (docflow.FileAccess.Authorize).
func (s *Server) fileFor(c *fasthttp.RequestCtx, files fileLoader, need docflow.Access) (*docflow.File, error) {
	id, err := pathID(c, "file_id")
	if err != nil {
		return nil, err
	}
	return s.fileByID(c, files, id, need)
}

// fileByID is fileFor for a file id the route has read already.
func (s *Server) fileByID(c *fasthttp.RequestCtx, files fileLoader, id int64, need docflow.Access) (*docflow.File, error) {
	f, err := files.FindFileByID(RequestContext(c), id)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeFile(c, files, f, need); err != nil {
		return nil, err
	}
	return f, nil
}

// authorizeFile checks that the current user may do need with f, a file
// the route found otherwise (by its stored name, say): the file access
// rule's refusal, or nil.
func (s *Server) authorizeFile(c *fasthttp.RequestCtx, files fileLoader, f *docflow.File, need docflow.Access) error {
	return s.fileAccess().Check(RequestContext(c), files, CurrentUser(c), f, need)
}

type pagination struct {
	Page     int     `json:"page"`
	PerPage  int     `json:"per_page"`
	Total    int     `json:"total"`
	Pages    int     `json:"pages"`
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
}

// parseFileFilter validates the list's query parameters; every problem is
// a 422 naming the parameter.
func (s *Server) parseFileFilter(c *fasthttp.RequestCtx) (docflow.FileFilter, error) {
	args := c.QueryArgs()
	f := docflow.FileFilter{Page: 1, PerPage: 25, SortBy: "created_at", SortOrder: "desc"}
	var errs []docflow.FieldError
	bad := func(field, msg string) { errs = append(errs, docflow.FieldError{Field: field, Message: msg}) }
	intArg := func(name string, lo, hi int, dst *int) {
		if !args.Has(name) {
			return
		}
		v, err := strconv.Atoi(string(args.Peek(name)))
		if err != nil || v < lo || v > hi {
			bad(name, name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
			return
		}
		*dst = v
	}
	intArg("page", 1, math.MaxInt32, &f.Page)
	intArg("per_page", 1, 200, &f.PerPage)
	if args.Has("sort_by") {
		f.SortBy = string(args.Peek("sort_by"))
		if !slices.Contains(docflow.FileSortFields, f.SortBy) {
			bad("sort_by", "sort_by must be one of "+strings.Join(docflow.FileSortFields, ", "))
		}
	}
	if args.Has("sort_order") {
		f.SortOrder = strings.ToLower(string(args.Peek("sort_order")))
		if f.SortOrder != "asc" && f.SortOrder != "desc" {
			bad("sort_order", "sort_order must be asc or desc")
		}
	}
	f.Search = strings.TrimSpace(string(args.Peek("search")))
	f.MimeType = strings.TrimSpace(string(args.Peek("mime_type")))
	if v := strings.TrimSpace(string(args.Peek("status"))); v != "" {
		if !slices.Contains(docflow.FileStatuses, v) {
			bad("status", "status must be one of "+strings.Join(docflow.FileStatuses, ", "))
		}
		f.Status = v
	}
	for _, name := range []string{"date_from", "date_to"} {
		v := strings.TrimSpace(string(args.Peek(name)))
		if v == "" {
			continue
		}
		t, ok := parseISODate(v)
		if !ok {
			bad(name, name+" must be an ISO 8601 date (YYYY-MM-DD)")
			continue
		}
		if name == "date_from" {
			f.DateFrom = &t
		} else {
			f.DateTo = &t
		}
	}
	// storage_provider: one kind of destination, or several (any of them).
	for _, p := range strings.Split(string(args.Peek("storage_provider")), ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			f.StorageProviders = append(f.StorageProviders, p)
		}
	}
	if v := string(args.Peek("tags")); v != "" {
		for _, t := range strings.Split(v, ",") {
			if t = strings.TrimSpace(t); t != "" {
				f.Tags = append(f.Tags, t)
			}
		}
	}
	// owner: one user's files; shared_with_me: the files others shared
	// with the current user (the documents page's filters).
	f.Owner = strings.TrimSpace(string(args.Peek("owner")))
	if v := strings.TrimSpace(string(args.Peek("shared_with_me"))); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			bad("shared_with_me", "shared_with_me must be true or false")
		} else if on {
			if u := CurrentUser(c); u != nil && !u.Anonymous && u.ID != "" {
				f.SharedWith = u.ID
			} else {
				f.IDs = []int64{} // nothing is shared with the single user
			}
		}
	}
	if v := strings.TrimSpace(string(args.Peek("ocr_quality"))); v != "" {
		if v != "poor" && v != "good" && v != "unchecked" {
			bad("ocr_quality", "ocr_quality must be poor, good or unchecked")
		}
		f.OCRQuality = v
		f.QualityThreshold = docflow.TextQualityThreshold.Get(s.cfg.Settings)
	}
	if len(errs) > 0 {
		e := docflow.Errorf(docflow.EINVALID, "%s", errs[0].Message)
		e.Fields = errs
		return f, e
	}
	f.VisibleTo = s.visibleTo(c)
	return f, nil
}

// parseISODate accepts a date (YYYY-MM-DD) or a full timestamp, of which
// the date counts: the bounds are whole days.
func parseISODate(v string) (time.Time, bool) {
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04"} {
		if t, err := time.Parse(layout, v); err == nil {
			y, m, d := t.Date()
			return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), true
		}
	}
	return time.Time{}, false
}

func (h *filesHandlers) pageURL(c *fasthttp.RequestCtx, page int) *string {
	q := url.Values{}
	c.QueryArgs().VisitAll(func(k, v []byte) { q.Add(string(k), string(v)) })
	q.Set("page", strconv.Itoa(page))
	u := h.s.BaseURL() + "/api/files?" + q.Encode()
	return &u
}

func (h *filesHandlers) list(c *fasthttp.RequestCtx) error {
	filter, err := h.s.parseFileFilter(c)
	if err != nil {
		return err
	}
	ctx := RequestContext(c)
	buf := listingBufs.Get().(*[]docflow.FileListing)
	defer func() {
		clear(*buf)
		*buf = (*buf)[:0]
		listingBufs.Put(buf)
	}()
	files, total, err := h.d.Files.ListFiles(ctx, filter, (*buf)[:0])
	if files != nil {
		*buf = files
	}
	if err != nil {
		return err
	}
	pages := (total + filter.PerPage - 1) / filter.PerPage
	p := pagination{Page: filter.Page, PerPage: filter.PerPage, Total: total, Pages: pages}
	if filter.Page < pages {
		p.Next = h.pageURL(c, filter.Page+1)
	}
	if filter.Page > 1 {
		p.Previous = h.pageURL(c, min(filter.Page-1, max(pages, 1)))
	}
	writeJSON(c, fasthttp.StatusOK, fileList{Files: files, Pagination: p})
	return nil
}

// listingBufs holds the arrays GET /api/files reads its pages into: the
// most frequent request then allocates little (see the postgres
// collectSummaries).
var listingBufs = sync.Pool{New: func() any { b := make([]docflow.FileListing, 0, 25); return &b }}

// fileList is the body of GET /api/files.
type fileList struct {
	Files      []docflow.FileListing `json:"files"`
	Pagination pagination            `json:"pagination"`
}

type fileRecord struct {
	ID               int64          `json:"id"`
	FileHash         string         `json:"filehash"`
	OriginalFilename string         `json:"original_filename"`
	StoredFilename   string         `json:"stored_filename"`
	FileSize         int64          `json:"file_size"`
	MimeType         string         `json:"mime_type"`
	CreatedAt        time.Time      `json:"created_at"`
	OwnerID          *string        `json:"owner_id"`
	PipelineID       *int64         `json:"pipeline_id"`
	DocumentTitle    *string        `json:"document_title"`
	OCRQualityScore  *float64       `json:"ocr_quality_score"`
	AIMetadata       map[string]any `json:"ai_metadata"`
	DuplicateOf      *int64         `json:"duplicate_of"`
	TaskID           string         `json:"task_id"`
}

// runSummary is the processing_status of a file record: the listing's
// summary plus the pipeline the current run follows.
type runSummary struct {
	docflow.ProcessingStatus
	PipelineID   *int64  `json:"pipeline_id"`
	PipelineName *string `json:"pipeline_name"`
}

func (h *filesHandlers) get(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
	if err != nil {
		return err
	}
	ctx := RequestContext(c)
	statuses, err := h.d.Files.ProcessingStatuses(ctx, []*docflow.File{f})
	if err != nil {
		return err
	}
	st := statuses[f.ID]
	logs, err := h.d.Files.FindProcessingLogs(ctx, f.ID)
	if err != nil {
		return err
	}
	orig, err := h.d.Blobs.Exists(ctx, f.OriginalBlob)
	if err != nil {
		return err
	}
	proc := false
	if f.ProcessedBlob != "" {
		if proc, err = h.d.Blobs.Exists(ctx, f.ProcessedBlob); err != nil {
			return err
		}
	}
	dests := []docflow.FileDestination{}
	if h.d.Destinations != nil {
		if dests, err = h.d.Destinations.FileDestinations(ctx, f.ID); err != nil {
			return err
		}
	}
	writeJSON(c, fasthttp.StatusOK, fileDetail{
		Destinations: dests,
		File: fileRecord{ID: f.ID, FileHash: f.FileHash, OriginalFilename: f.OriginalFilename, StoredFilename: f.StoredFilename,
			FileSize: f.FileSize, MimeType: f.MimeType, CreatedAt: f.CreatedAt, OwnerID: f.OwnerID, PipelineID: f.PipelineID,
			DocumentTitle: f.DocumentTitle, OCRQualityScore: f.OCRQualityScore, AIMetadata: f.AIMetadata,
			DuplicateOf: f.DuplicateOf, TaskID: f.TaskID},
		ProcessingStatus: runSummary{st, st.PipelineID, st.PipelineName},
		Logs:             logs,
		FilesOnDisk:      filesOnDisk{Original: orig, Processed: proc},
	})
	return nil
}

func metaString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	return ""
}

func (h *filesHandlers) metadata(c *fasthttp.RequestCtx) error {
	f, err := h.s.fileFor(c, h.d.Files, docflow.AccessView)
	if err != nil {
		return err
	}
	m := f.AIMetadata
	writeJSON(c, fasthttp.StatusOK, fileMetadata{
		DocumentType:  metaString(m, "document_type"),
		Date:          metaString(m, "date"),
		Vendor:        metaString(m, "vendor", "sender"),
		Amount:        metaString(m, "amount"),
		ExtractedText: f.OCRText,
	})
	return nil
}
