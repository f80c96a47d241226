package http

import (
	"slices"

	"docflow"
)

// The response types of the files API and uploads, and the documentation
// of their routes (/openapi.json).

// fileDetail is the body of GET /api/files/{file_id}.
type fileDetail struct {
	File             fileRecord                `json:"file"`
	ProcessingStatus runSummary                `json:"processing_status"`
	Logs             []*docflow.ProcessingLog  `json:"logs" doc:"The processing log, oldest first: each step with its status and time"`
	Destinations     []docflow.FileDestination `json:"destinations" doc:"Delivery to each storage destination"`
	FilesOnDisk      filesOnDisk               `json:"files_on_disk"`
}

type filesOnDisk struct {
	Original  bool `json:"original"`
	Processed bool `json:"processed"`
}

// fileMetadata is the body of GET /api/files/{file_id}/metadata.
type fileMetadata struct {
	DocumentType  string `json:"document_type"`
	Date          string `json:"date"`
	Vendor        string `json:"vendor"`
	Amount        string `json:"amount"`
	ExtractedText string `json:"extracted_text"`
}

type fileDeleted struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	FileID  int64  `json:"file_id"`
}

type filesDeleted struct {
	Status     string  `json:"status"`
	Message    string  `json:"message"`
	DeletedIDs []int64 `json:"deleted_ids"`
}

type fileReprocessed struct {
	Status        string `json:"status"`
	Message       string `json:"message"`
	FileID        int64  `json:"file_id"`
	Filename      string `json:"filename"`
	TaskID        string `json:"task_id"`
	ForceCloudOCR bool   `json:"force_cloud_ocr,omitempty"`
}

type bulkReprocessed struct {
	Status         string        `json:"status"`
	Message        string        `json:"message"`
	ProcessedFiles []reprocessed `json:"processed_files"`
	Errors         []fileError   `json:"errors" doc:"The ids that were not queued and why"`
	TaskIDs        []string      `json:"task_ids"`
	ForceCloudOCR  bool          `json:"force_cloud_ocr,omitempty"`
}

type pipelineAssigned struct {
	FileID     int64  `json:"file_id"`
	PipelineID *int64 `json:"pipeline_id"`
}

type sendQueued struct {
	Status        string `json:"status" example:"queued"`
	FileID        int64  `json:"file_id"`
	IntegrationID int64  `json:"integration_id"`
}

type processURLRequest struct {
	URL      *string `json:"url" openapi:"required" doc:"An http or https URL on the public internet" example:"https://example.com/invoice.pdf"`
	Filename *string `json:"filename" doc:"The name to store (default: from the URL or the answer)"`
}

type processAllResult struct {
	Message   string   `json:"message"`
	PDFFiles  []string `json:"pdf_files"`
	TaskIDs   []string `json:"task_ids"`
	Throttled bool     `json:"throttled"`
}

var fileIDs = []int64{42, 43}

var filesListParams = []Param{
	{Name: "page", Type: "integer", Doc: "Page, from 1", Default: 1, Min: 1},
	{Name: "per_page", Type: "integer", Doc: "Files per page", Default: 25, Min: 1, Max: 200},
	{Name: "sort_by", Doc: "Sort key", Default: "created_at", Enum: []string{"id", "original_filename", "file_size", "mime_type", "created_at"}},
	{Name: "sort_order", Default: "desc", Enum: []string{"asc", "desc"}},
	{Name: "search", Doc: "Part of the file name"},
	{Name: "mime_type", Doc: "Exact MIME type"},
	{Name: "status", Enum: []string{"pending", "processing", "completed", "failed", "duplicate"}},
	{Name: "date_from", Doc: "Created on or after (ISO 8601 date)"},
	{Name: "date_to", Doc: "Created on or before (ISO 8601 date)"},
	{Name: "storage_provider", Doc: "Delivered to this destination type (comma-separated: any of them)"},
	{Name: "tags", Doc: "Comma-separated tags of the AI metadata, all of which the file has"},
	{Name: "ocr_quality", Doc: "poor (below TEXT_QUALITY_THRESHOLD), good, or unchecked", Enum: []string{"poor", "good", "unchecked"}},
}

var versionParam = Param{Name: "version", Enum: []string{"original", "processed"}}

var uploadFields = []FormField{{Name: "file", File: true, Required: true, Doc: "The document (PDF, Office, text, image…)"}}

var (
	docListFiles = Doc{
		Summary:     "List files",
		Description: "The files the caller may see, filtered and sorted; every filter combines with AND.",
		Params:      filesListParams,
		Responses:   []Response{OK(fileList{})},
		Examples: []Example{
			{Name: "newest", Summary: "The newest files"},
			{Name: "completed-pdfs", Summary: "Completed PDFs, 10 per page", Params: map[string]string{"status": "completed", "mime_type": "application/pdf", "per_page": "10"}},
		},
	}
	docGetFile = Doc{
		Summary:     "A file with its processing status, log and deliveries",
		Description: "Poll it to follow a document through the pipeline: processing_status.status ends at completed, failed or duplicate.",
		Responses:   []Response{OK(fileDetail{})},
		Errors:      []int{404},
		Examples:    []Example{{Name: "file", Summary: "One file", Params: map[string]string{"file_id": "42"}}},
	}
	docFileMetadata = Doc{
		Summary:   "A file's extracted metadata",
		Responses: []Response{OK(fileMetadata{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "metadata", Summary: "What was extracted", Params: map[string]string{"file_id": "42"}}},
	}
	docPreview = Doc{
		Summary:   "Show a file inline",
		Params:    []Param{{Name: "version", Required: true, Enum: versionParam.Enum, Doc: "Which bytes: as uploaded or as processed (PDF)"}},
		Responses: []Response{{Status: 200, Binary: true, Doc: "The file, under its own MIME type"}},
		Errors:    []int{400, 404},
		Examples:  []Example{{Name: "original", Summary: "The uploaded bytes", Params: map[string]string{"file_id": "42", "version": "original"}}},
	}
	docDownload = Doc{
		Summary: "Download a file",
		Params: []Param{{Name: "version", Default: "processed", Enum: versionParam.Enum,
			Doc: "processed (default, falling back to the original) or original"}},
		Responses: []Response{{Status: 200, Binary: true, Doc: "The file as an attachment named after the original file",
			Headers: map[string]string{"Content-Disposition": "attachment; filename=…"}}},
		Errors:   []int{400, 404},
		Examples: []Example{{Name: "download", Summary: "The processed file, or the original", Params: map[string]string{"file_id": "42"}}},
	}
	docDeleteFile = Doc{
		Summary:     "Delete a file",
		Description: "The owner and administrators delete; 403 when ALLOW_FILE_DELETE is off.",
		NoBody:      true,
		Responses:   []Response{OK(fileDeleted{})},
		Errors:      []int{403, 404},
		Examples:    []Example{{Name: "delete", Summary: "Delete one file", Params: map[string]string{"file_id": "42"}}},
	}
	docBulkDelete = Doc{
		Summary:     "Delete files",
		Description: "The body is a JSON array of file ids (at most 10,000); files the caller may not delete are left alone.",
		Body:        fileIDs,
		Responses:   []Response{OK(filesDeleted{})},
		Errors:      []int{403, 404},
	}
	docReprocess = Doc{
		Summary:   "Process a file again",
		NoBody:    true,
		Responses: []Response{OK(fileReprocessed{})},
		Errors:    []int{400, 403, 404},
		Examples:  []Example{{Name: "reprocess", Summary: "Queue a file again", Params: map[string]string{"file_id": "42"}}},
	}
	docReprocessCloud = Doc{
		Summary:   "Process a file again with cloud OCR",
		NoBody:    true,
		Responses: []Response{OK(fileReprocessed{})},
		Errors:    []int{400, 403, 404},
	}
	docBulkReprocess = Doc{
		Summary:     "Process files again",
		Description: "The body is a JSON array of file ids; each id that was not queued is listed in errors.",
		Body:        fileIDs,
		Responses:   []Response{OK(bulkReprocessed{})},
		Examples:    []Example{{Name: "unknown", Summary: "Ids that do not exist are reported, not fatal", Body: []int64{999999}}},
	}
	docBulkReprocessCloud = Doc{
		Summary:   "Process files again with cloud OCR",
		Body:      fileIDs,
		Responses: []Response{OK(bulkReprocessed{})},
	}
	docBulkDownload = Doc{
		Summary: "Download files as one ZIP",
		Description: "The body is a JSON array of file ids. Each file's processed version is preferred; files missing on disk are " +
			"skipped. 404 when none is found.",
		Body:      fileIDs,
		Responses: []Response{{Status: 200, Binary: true, ContentType: "application/zip", Headers: map[string]string{"Content-Disposition": "attachment; filename=docflow_bulk_<timestamp>.zip"}}},
		Errors:    []int{404},
	}
	docAssignPipeline = Doc{
		Summary:     "Choose the pipeline a file is processed with",
		Description: "Without pipeline_id the file's own choice is cleared (routing rules decide again).",
		NoBody:      true,
		Params:      []Param{{Name: "pipeline_id", Type: "integer", Min: 1, Doc: "A pipeline the caller may use"}},
		Responses:   []Response{OK(pipelineAssigned{})},
		Errors:      []int{403, 404},
		Examples:    []Example{{Name: "clear", Summary: "Let routing decide", Params: map[string]string{"file_id": "42"}}},
	}
	docSendTo = Doc{
		Summary:   "Send a file to one of the caller's destinations",
		NoBody:    true,
		Responses: []Response{{Status: 202, Body: sendQueued{}, Doc: "Queued for delivery"}},
		Errors:    []int{403, 404},
	}

	docUpload = idempotent(Doc{
		Summary:     "Upload a document",
		Description: "A multipart form with the file in field file. The file is stored and queued for its pipeline; follow it with GET /api/files/{file_id}.",
		Multipart:   uploadFields,
		Responses:   []Response{Created(uploadResponse{})},
		Errors:      []int{400, 403},
		Examples:    []Example{{Name: "upload", Summary: "Upload a text file"}},
	})
	docFilesUpload = idempotent(Doc{
		Summary:   "Upload a document (200)",
		Multipart: uploadFields,
		Responses: []Response{OK(uploadResponse{})},
		Errors:    []int{400, 403},
		Examples:  []Example{{Name: "upload", Summary: "Upload a text file"}},
	})
	docUIUpload = idempotent(Doc{
		Summary:     "Upload a document from the web front end",
		Description: "With ENABLE_DEDUPLICATION an exact duplicate answers status duplicate with duplicate_of, and is not queued again. Subject to the per-user upload window.",
		Multipart:   uploadFields,
		Responses:   []Response{OK(uploadResponse{})},
		Errors:      []int{400, 403},
		Examples:    []Example{{Name: "upload", Summary: "Upload a text file"}},
	})
	docAutomationUpload = idempotent(Doc{
		Summary:   "Upload a document from an automation platform",
		Multipart: uploadFields,
		Responses: []Response{OK(uploadResponse{})},
		Errors:    []int{400, 403},
		Examples:  []Example{{Name: "upload", Summary: "Upload a text file"}},
	})
	docProcessURL = idempotent(Doc{
		Summary: "Fetch a document from a URL and process it",
		Description: "Private and internal addresses are refused (400), as are unsupported types (400); " +
			"404 nothing at the URL, 408 too slow, 413 too large, 502 no connection.",
		Body:      processURLRequest{},
		Responses: []Response{OK(uploadResponse{})},
		Errors:    []int{400, 403, 404, 408, 413, 502},
		Examples: []Example{{Name: "private", Summary: "An internal address is refused", Status: 400,
			Body: map[string]any{"url": "http://127.0.0.1/invoice.pdf"}}},
	})
	docProcessAll = Doc{
		Summary:     "Process every PDF in the working folder",
		Description: "Over 20 files, tasks are spread out (throttled).",
		NoBody:      true,
		Responses:   []Response{OK(processAllResult{})},
		Examples:    []Example{{Name: "all", Summary: "Queue the working folder's PDFs"}},
	}
)

// idempotencyKeyParam is the header of the routes that create documents
// (idempotency.go).
var idempotencyKeyParam = Param{Name: idempotencyHeader, In: "header", Example: "3f2b9c1e-upload-42",
	Doc: "Names the request (1 to 255 printable ASCII characters): a repeat with the same key by the same user " +
		"within a day answers what the first answered and runs nothing; the same key on another request is 422; " +
		"a repeat while the first still runs is 409 with Retry-After."}

// idempotent adds the Idempotency-Key header, its 409 and the
// Idempotent-Replayed answer header to the documentation of a route
// wrapped by idempotency.wrap.
func idempotent(d Doc) Doc {
	d.Params = append(append([]Param{}, d.Params...), idempotencyKeyParam)
	if !slices.Contains(d.Errors, 409) {
		d.Errors = append(append([]int{}, d.Errors...), 409)
	}
	rs := make([]Response, len(d.Responses))
	for i, r := range d.Responses {
		h := map[string]string{"Idempotent-Replayed": "true when this is the answer of an earlier request with the same Idempotency-Key"}
		for k, v := range r.Headers {
			h[k] = v
		}
		r.Headers = h
		rs[i] = r
	}
	d.Responses = rs
	return d
}
