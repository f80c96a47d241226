package http

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"mime"
	"net/textproto"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// UploadDeps are the dependencies of the upload routes.
type UploadDeps struct {
	Intake docflow.IntakeService
	// Idempotency keeps the Idempotency-Key header's keys
	// (idempotency.go); nil ignores the header.
	Idempotency docflow.IdempotencyStore
	// IdempotencyHold is how long a claimed key stays locked without its
	// process renewing it (default 30 s; see idempotency.wrap).
	IdempotencyHold time.Duration
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
	h := &uploadHandlers{s: s, d: d, idem: &idempotency{s: s, store: d.Idempotency, hold: d.IdempotencyHold}}
	stream := Route{Auth: AuthUser, Limit: LimitUpload, Stream: true, Timeout: uploadTimeout}
	s.Handle("POST", "/api/upload", stream, h.upload(docflow.ChannelUpload, fasthttp.StatusCreated), docUpload)
	s.Handle("POST", "/api/files/upload", stream, h.upload(docflow.ChannelUpload, fasthttp.StatusOK), docFilesUpload)
	s.Handle("POST", "/api/ui-upload", stream, h.upload(docflow.ChannelUIUpload, fasthttp.StatusOK), docUIUpload)
	s.Handle("POST", "/api/files/ui-upload", stream, h.upload(docflow.ChannelUIUpload, fasthttp.StatusOK), docUIUpload)
	s.Handle("POST", "/api/automation/actions/upload", Route{Auth: AuthToken, Limit: LimitUpload, Stream: true, Timeout: uploadTimeout},
		h.upload(docflow.ChannelAutomation, fasthttp.StatusOK), docAutomationUpload)
	s.Handle("POST", "/api/process-url", Route{Auth: AuthUser, Limit: LimitUpload, Timeout: 10 * time.Minute},
		h.idem.wrap(10*time.Minute, nil, answerURL, h.processURL), docProcessURL)
	s.Handle("POST", "/api/processall", Route{Auth: AuthAdmin, Limit: LimitDefault, Timeout: 10 * time.Minute}, h.processAll, docProcessAll)
}

type uploadHandlers struct {
	s    *Server
	d    UploadDeps
	idem *idempotency
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

// upload is the handler of an upload route of channel, answering
// okStatus for a file taken in.
func (h *uploadHandlers) upload(channel string, okStatus int) Handler {
	answer := func(c *fasthttp.RequestCtx, res *docflow.IntakeResult) { answerUpload(c, channel, okStatus, res) }
	run := h.idem.wrap(uploadTimeout, h.s.uploadBodyHash, answer, func(c *fasthttp.RequestCtx) error {
		return h.s.upload(c, h.d, channel, okStatus)
	})
	return func(c *fasthttp.RequestCtx) error {
		err := run(c)
		if err != nil {
			// NOTE: the body may be partly unread; closing the connection
			// spares reading (possibly gigabytes) just to reuse it.
			c.SetConnectionClose()
			if docflow.ErrorCode(err) == docflow.ETOOLARGE {
				h.s.drainRefusedUpload(c)
			}
		}
		return err
	}
}

func (s *Server) upload(c *fasthttp.RequestCtx, d UploadDeps, channel string, okStatus int) error {
	ctx := RequestContext(c)
	user := CurrentUser(c)
	max := docflow.MaxUploadSize.Get(s.cfg.Settings)
	if cl := c.Request.Header.ContentLength(); cl > 0 && int64(cl) > max+multipartSlack {
		return docflow.Errorf(docflow.ETOOLARGE, "Request of %d bytes exceeds the maximum upload size of %d bytes", cl, max)
	}
	if err := d.Intake.Admit(ctx, user, channel); err != nil {
		return err
	}
	part, err := s.filePart(c)
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
		Idempotency:         idempotencyClaim(c, part.FileName()),
	})
	if err != nil {
		return err
	}
	setIdempotentBody(c, part.FileName(), res.File.FileHash)
	answerUpload(c, channel, okStatus, res)
	return nil
}

// answerUpload writes an upload route's answer for res.
func answerUpload(c *fasthttp.RequestCtx, channel string, okStatus int, res *docflow.IntakeResult) {
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
}

// uploadBodyHash reads a repeated upload's file part, bounded by
// MAX_UPLOAD_SIZE and without keeping it, and returns its body hash as
// setIdempotentBody records the first one's.
func (s *Server) uploadBodyHash(c *fasthttp.RequestCtx) (string, error) {
	part, err := s.filePart(c)
	if err != nil {
		return "", err
	}
	max := docflow.MaxUploadSize.Get(s.cfg.Settings)
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(part, max+1))
	if err != nil {
		return "", docflow.Errorf(docflow.EBADREQUEST, "Upload incomplete: %v", err)
	}
	if n > max {
		return "", docflow.Errorf(docflow.ETOOLARGE, "File exceeds the maximum upload size of %d bytes", max)
	}
	return docflow.IdempotentUploadBody(part.FileName(), hex.EncodeToString(h.Sum(nil))), nil
}

// filePart reads the streamed multipart body up to the part named "file".
// Other fields before it are skipped (bounded).
func (s *Server) filePart(c *fasthttp.RequestCtx) (*formFile, error) {
	mt, params, err := mime.ParseMediaType(string(c.Request.Header.ContentType()))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, invalid("file", "A multipart/form-data body with a field named file is required")
	}
	body := s.progressBody(c) // a deadline by progress, not total time
	if body == nil {
		return nil, invalid("file", "Field file is required")
	}
	return readFilePart(body, params["boundary"])
}

// Limits of the multipart reader.
const (
	// formBufSize is the read buffer: the file is handed on in chunks of up
	// to this size, and a part's header block must fit in it.
	formBufSize = 64 << 10
	// maxBoundary is RFC 2046's limit on the boundary's length.
	maxBoundary = 70
)

// formFile is the content of a multipart file part, read straight from the
// request stream.
//
// NOTE: mime/multipart reads through a 4 KB buffer and scans each window
// for the boundary; a 100 KB upload then costs some thirty scans and reads,
// a noticeable share of an upload's CPU. This reader parses the same
// framing (RFC 2046, CRLF line ends, as every browser and HTTP library
// sends it) but searches 64 KB windows. Part headers are read as
// mime/multipart reads them, and FileName applies the same rule (the base
// name); Content-Transfer-Encoding, which RFC 7578 deprecates, is not
// decoded.
type formFile struct {
	br       *bufio.Reader
	delim    []byte // CRLF "--" boundary
	filename string
	done     bool
}

// FileName is the part's filename parameter without any directory part
// (RFC 7578 §4.2), as multipart.Part.FileName returns it.
func (f *formFile) FileName() string {
	if f.filename == "" {
		return ""
	}
	return filepath.Base(f.filename)
}

// Read returns the part's content; io.EOF at its closing delimiter, and
// io.ErrUnexpectedEOF when the body ends before it.
func (f *formFile) Read(p []byte) (int, error) {
	if f.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, found, err := scanPart(f.br, f.delim, p)
	if found {
		f.done = true
		if n == 0 {
			return 0, io.EOF
		}
	}
	return n, err
}

// scanPart copies into p (when not nil; else discards) the part content
// buffered in br up to the delimiter, and reports whether the delimiter
// follows what it returned. It never returns bytes that may begin the
// delimiter.
func scanPart(br *bufio.Reader, delim, p []byte) (int, bool, error) {
	buf, rerr := br.Peek(br.Size())
	end, found := len(buf)-len(delim)+1, false
	for from := 0; from < len(buf); {
		i := bytes.Index(buf[from:], delim)
		if i < 0 {
			break
		}
		i += from
		m := afterDelimiter(buf[i+len(delim):], rerr != nil)
		if m == 0 {
			// Undecided until more arrives: stop before it.
			end = i
			break
		}
		if m > 0 {
			end, found = i, true
			break
		}
		from = i + 1
	}
	if !found && rerr != nil {
		if errors.Is(rerr, io.EOF) {
			rerr = io.ErrUnexpectedEOF
		}
		return 0, false, rerr
	}
	n := max(end, 0)
	if p != nil {
		n = copy(p, buf[:n])
	}
	br.Discard(n) //nolint:errcheck
	return n, found && n == end, nil
}

// afterDelimiter decides, as mime/multipart does, whether a delimiter match
// is one: it must be followed by white space, a line end or "--". It
// returns 1 (yes), -1 (no) or 0 (not enough data yet; never when ended).
func afterDelimiter(rest []byte, ended bool) int {
	if len(rest) == 0 {
		if ended {
			return 1
		}
		return 0
	}
	switch c := rest[0]; {
	case c == ' ' || c == '\t' || c == '\r' || c == '\n':
		return 1
	case c == '-' && len(rest) == 1:
		if ended {
			return -1
		}
		return 0
	case c == '-' && rest[1] == '-':
		return 1
	}
	return -1
}

// readFilePart finds the part named "file" in a multipart body. Parts
// before it are skipped, up to maxOtherParts bytes in all.
func readFilePart(body io.Reader, boundary string) (*formFile, error) {
	malformed := docflow.Errorf(docflow.EBADREQUEST, "Malformed multipart body")
	missing := invalid("file", "Field file is required")
	if len(boundary) > maxBoundary {
		return nil, malformed
	}
	br := bufio.NewReaderSize(body, formBufSize)
	dash := "--" + boundary
	// The preamble ends at the first delimiter line.
	for {
		line, err := readLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, missing
			}
			return nil, malformed
		}
		if l := trimLWSP(line); bytes.Equal(l, []byte(dash)) {
			break
		} else if bytes.Equal(l, []byte(dash+"--")) {
			return nil, missing
		}
	}
	delim := []byte("\r\n" + dash)
	var skipped int64
	for {
		name, filename, err := readPartHeader(br)
		if err != nil {
			return nil, malformed
		}
		if name == "file" {
			return &formFile{br: br, delim: delim, filename: filename}, nil
		}
		for {
			n, found, err := scanPart(br, delim, nil)
			skipped += int64(n)
			if skipped > maxOtherParts {
				return nil, docflow.Errorf(docflow.ETOOLARGE, "Form fields other than file exceed %d bytes", maxOtherParts)
			}
			if err != nil {
				return nil, malformed
			}
			if found {
				break
			}
		}
		br.Discard(len(delim)) //nolint:errcheck
		// After a delimiter: "--" ends the body, else the line ends.
		line, err := readLine(br)
		if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
			return nil, malformed
		}
		if bytes.HasPrefix(line, []byte("--")) {
			return nil, missing
		}
		if len(trimLWSP(line)) != 0 {
			return nil, malformed
		}
	}
}

// readLine returns the next line without its line end; a line longer than
// the buffer is an error.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), nil
}

func trimLWSP(b []byte) []byte { return bytes.TrimRight(b, " \t") }

// readPartHeader reads a part's header block and returns the form field
// name and the filename of its Content-Disposition (form-data only, as
// multipart.Part.FormName has it).
func readPartHeader(br *bufio.Reader) (name, filename string, err error) {
	var disposition string
	total := 0
	for {
		line, err := readLine(br)
		if err != nil {
			return "", "", err
		}
		if total += len(line); total > formBufSize {
			return "", "", errors.New("part header too large")
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			// Obsolete line folding continues the previous header.
			if disposition != "" {
				disposition += " " + string(bytes.TrimSpace(line))
			}
			continue
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return "", "", errors.New("malformed part header")
		}
		if textproto.CanonicalMIMEHeaderKey(string(bytes.TrimSpace(k))) == "Content-Disposition" && disposition == "" {
			disposition = string(bytes.TrimSpace(v))
		}
	}
	d, params, err := mime.ParseMediaType(disposition)
	if err != nil || d != "form-data" {
		return "", params["filename"], nil
	}
	return params["name"], params["filename"], nil
}

func (h *uploadHandlers) processURL(c *fasthttp.RequestCtx) error {
	var req processURLRequest
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
	if err := h.d.Intake.Admit(ctx, user, docflow.ChannelURL); err != nil {
		return err
	}
	res, err := h.d.Intake.FetchURL(ctx, user, *req.URL, name, idempotencyClaim(c, ""))
	if err != nil {
		return err
	}
	answerURL(c, res)
	return nil
}

// answerURL writes process-url's answer for res.
func answerURL(c *fasthttp.RequestCtx, res *docflow.IntakeResult) {
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
}

func (h *uploadHandlers) processAll(c *fasthttp.RequestCtx) error {
	res, err := h.d.Intake.ProcessAll(RequestContext(c), CurrentUser(c))
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
	writeJSON(c, fasthttp.StatusOK, processAllResult{Message: msg, PDFFiles: res.PDFFiles, TaskIDs: res.TaskIDs, Throttled: res.Throttled})
	return nil
}
