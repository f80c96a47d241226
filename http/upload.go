package http

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// UploadDeps are the dependencies of the upload routes.
type UploadDeps struct {
	Intake docflow.IntakeService
}

// uploadTimeout bounds one upload request: a 1 GiB body over a slow link.
const uploadTimeout = 30 * time.Minute

// multipartSlack is the framing a multipart body adds around the file
// (boundaries, part headers); Content-Length may exceed MAX_UPLOAD_SIZE by
// this much before the request is refused unread.
const multipartSlack = 64 << 10

// maxOtherParts caps the bytes of form fields other than "file" that an
// upload may carry before its file part.
const maxOtherParts = 1 << 20

// MountUploads registers the upload, URL-intake and processall routes.
func (s *Server) MountUploads(d UploadDeps) {
	if d.Intake == nil {
		panic("http: MountUploads needs Intake")
	}
	stream := Route{Auth: AuthUser, Limit: LimitUpload, Stream: true, Timeout: uploadTimeout}
	s.Handle("POST", "/api/upload", stream, s.uploadHandler(d, docflow.ChannelUpload, fasthttp.StatusCreated))
	s.Handle("POST", "/api/files/upload", stream, s.uploadHandler(d, docflow.ChannelUpload, fasthttp.StatusOK))
	s.Handle("POST", "/api/ui-upload", stream, s.uploadHandler(d, docflow.ChannelUIUpload, fasthttp.StatusOK))
	s.Handle("POST", "/api/files/ui-upload", stream, s.uploadHandler(d, docflow.ChannelUIUpload, fasthttp.StatusOK))
	s.Handle("POST", "/api/automation/actions/upload", Route{Auth: AuthToken, Limit: LimitUpload, Stream: true, Timeout: uploadTimeout},
		s.uploadHandler(d, docflow.ChannelAutomation, fasthttp.StatusOK))
	s.Handle("POST", "/api/process-url", Route{Auth: AuthUser, Limit: LimitUpload, Timeout: 10 * time.Minute}, s.processURL(d))
	s.Handle("POST", "/api/processall", Route{Auth: AuthUser, Limit: LimitDefault, Timeout: 10 * time.Minute}, s.processAll(d))
}

type uploadResponse struct {
	TaskID           *string        `json:"task_id"`
	Status           string         `json:"status"`
	Message          string         `json:"message,omitempty"`
	Filename         string         `json:"filename,omitempty"`
	OriginalFilename string         `json:"original_filename,omitempty"`
	StoredFilename   string         `json:"stored_filename,omitempty"`
	FileID           int64          `json:"file_id,omitempty"`
	Size             *int64         `json:"size,omitempty"`
	DuplicateOf      *duplicateInfo `json:"duplicate_of,omitempty"`
}

type duplicateInfo struct {
	DuplicateType    string `json:"duplicate_type"`
	OriginalFileID   int64  `json:"original_file_id"`
	OriginalFilename string `json:"original_filename"`
	Message          string `json:"message"`
}

func (s *Server) uploadHandler(d UploadDeps, channel string, okStatus int) Handler {
	return func(c *fasthttp.RequestCtx) error {
		err := s.upload(c, d, channel, okStatus)
		if err != nil {
			// NOTE: the body may be partly unread; closing the connection
			// spares reading (possibly gigabytes) just to reuse it.
			c.SetConnectionClose()
		}
		return err
	}
}

func (s *Server) upload(c *fasthttp.RequestCtx, d UploadDeps, channel string, okStatus int) error {
	ctx := RequestContext(c)
	user := CurrentUser(c)
	max := docflow.SettingInt64(s.cfg.Settings, "MAX_UPLOAD_SIZE", 1<<30)
	if cl := c.Request.Header.ContentLength(); cl > 0 && int64(cl) > max+multipartSlack {
		return docflow.Errorf(docflow.ETOOLARGE, "Request of %d bytes exceeds the maximum upload size of %d bytes", cl, max)
	}
	if err := d.Intake.Admit(ctx, user, channel); err != nil {
		return err
	}
	part, err := filePart(c)
	if err != nil {
		return err
	}
	res, err := d.Intake.Ingest(ctx, docflow.Upload{
		Filename:            part.FileName(),
		Body:                part,
		Size:                -1,
		User:                user,
		Channel:             channel,
		SkipDuplicateRecord: channel == docflow.ChannelUIUpload,
	})
	if err != nil {
		return err
	}
	f := res.File
	var task *string
	if res.TaskID != "" {
		task = &res.TaskID
	}
	status, msg := "queued", "File uploaded successfully and queued for processing"
	var dup *duplicateInfo
	if res.DuplicateOf != nil {
		status = docflow.StatusDuplicate
		msg = "Exact duplicate of an existing file; not queued again"
		dup = &duplicateInfo{DuplicateType: "exact", OriginalFileID: res.DuplicateOf.ID,
			OriginalFilename: res.DuplicateOf.OriginalFilename, Message: msg}
	}
	switch channel {
	case docflow.ChannelUIUpload:
		stored := f.StoredFilename
		if dup != nil && f.ID == 0 {
			stored = res.DuplicateOf.StoredFilename
		}
		writeJSON(c, okStatus, uploadResponse{TaskID: task, Status: status, OriginalFilename: f.OriginalFilename,
			StoredFilename: stored, FileID: f.ID, DuplicateOf: dup})
	case docflow.ChannelAutomation:
		if dup == nil {
			status = "accepted"
		}
		writeJSON(c, okStatus, uploadResponse{TaskID: task, Status: status, Filename: f.OriginalFilename, FileID: f.ID, DuplicateOf: dup})
	default:
		writeJSON(c, okStatus, uploadResponse{TaskID: task, Status: status, Message: msg, Filename: f.OriginalFilename, FileID: f.ID, DuplicateOf: dup})
	}
	return nil
}

// filePart reads the streamed multipart body up to the part named "file".
// Other fields before it are skipped (bounded).
func filePart(c *fasthttp.RequestCtx) (*multipart.Part, error) {
	mt, params, err := mime.ParseMediaType(string(c.Request.Header.ContentType()))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, invalid("file", "A multipart/form-data body with a field named file is required")
	}
	body := c.RequestBodyStream()
	if body == nil {
		return nil, invalid("file", "Field file is required")
	}
	mr := multipart.NewReader(body, params["boundary"])
	var skipped int64
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, invalid("file", "Field file is required")
		}
		if err != nil {
			return nil, docflow.Errorf(docflow.EBADREQUEST, "Malformed multipart body")
		}
		if p.FormName() == "file" {
			return p, nil
		}
		n, err := io.Copy(io.Discard, io.LimitReader(p, maxOtherParts-skipped+1))
		skipped += n
		if err != nil {
			return nil, docflow.Errorf(docflow.EBADREQUEST, "Malformed multipart body")
		}
		if skipped > maxOtherParts {
			return nil, docflow.Errorf(docflow.ETOOLARGE, "Form fields other than file exceed %d bytes", maxOtherParts)
		}
	}
}

func (s *Server) processURL(d UploadDeps) Handler {
	return func(c *fasthttp.RequestCtx) error {
		var req struct {
			URL      *string `json:"url"`
			Filename *string `json:"filename"`
		}
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
		if req.URL == nil || strings.TrimSpace(*req.URL) == "" {
			return invalid("url", "url is required")
		}
		name := ""
		if req.Filename != nil {
			name = *req.Filename
		}
		ctx := RequestContext(c)
		user := CurrentUser(c)
		if err := d.Intake.Admit(ctx, user, docflow.ChannelURL); err != nil {
			return err
		}
		res, err := d.Intake.FetchURL(ctx, user, *req.URL, name)
		if err != nil {
			return err
		}
		f := res.File
		size := f.FileSize
		out := uploadResponse{Status: "queued", Message: "URL downloaded and queued for processing",
			Filename: f.OriginalFilename, FileID: f.ID, Size: &size}
		if res.TaskID != "" {
			out.TaskID = &res.TaskID
		}
		if res.DuplicateOf != nil {
			out.Status = docflow.StatusDuplicate
			out.Message = "Exact duplicate of an existing file; not queued again"
			out.DuplicateOf = &duplicateInfo{DuplicateType: "exact", OriginalFileID: res.DuplicateOf.ID,
				OriginalFilename: res.DuplicateOf.OriginalFilename, Message: out.Message}
		}
		writeJSON(c, fasthttp.StatusOK, out)
		return nil
	}
}

func (s *Server) processAll(d UploadDeps) Handler {
	return func(c *fasthttp.RequestCtx) error {
		res, err := d.Intake.ProcessAll(RequestContext(c), CurrentUser(c))
		if err != nil {
			return err
		}
		msg := "No PDF files found to process"
		if n := len(res.PDFFiles); n > 0 {
			msg = "Queued " + strconv.Itoa(n) + " PDF files for processing"
			if res.Throttled {
				msg += " (throttled)"
			}
		}
		writeJSON(c, fasthttp.StatusOK, map[string]any{
			"message": msg, "pdf_files": res.PDFFiles, "task_ids": res.TaskIDs, "throttled": res.Throttled,
		})
		return nil
	}
}
