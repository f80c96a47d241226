// Package paperlesstest is an in-process Paperless-ngx for tests: token
// authentication, /api/documents/post_document/ (multipart, answered with
// the consumption task's UUID), /api/tasks/?task_id=, the tags and
// correspondents endpoints (filter name__iexact, create), /api/ui_settings/
// and /api/documents/, answering with the statuses and bodies of
// Paperless-ngx's REST API (DRF's {"detail": …} for 401 and 403, field
// errors for 400). Consumption is simulated as Paperless's consumer does
// it: a file whose MD5 checksum a document already has fails with "It is
// a duplicate of <title> (#<id>)"; a full disk fails with Errno 28. Tasks
// stay PENDING for ConsumeDelay.
package paperlesstest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Token is the API token the server accepts.
const Token = "0123456789abcdef0123456789abcdef01234567"

// Document is a consumed document.
type Document struct {
	ID               int64
	Title            string
	Created          string
	Correspondent    int64
	Tags             []int64
	OriginalFilename string
	MimeType         string
	Checksum         string
	Size             int64
	// Data is the content, read from disk by Server.Documents.
	Data []byte
	disk string
}

// TB is what the server needs of a test.
type TB interface {
	Cleanup(func())
	TempDir() string
}

type object struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

type taskRecord struct {
	id       string
	file     string
	startAt  time.Time
	doneAt   time.Time
	status   string
	result   string
	document int64
}

// Server is the fake Paperless-ngx. Its URL is the server's root.
type Server struct {
	*httptest.Server

	mu            sync.Mutex
	documents     []*Document
	objects       map[string][]object // "tags", "correspondents"
	tasks         map[string]*taskRecord
	seq           int64
	faults        []fault
	calls         map[string]int
	permissions   []string
	superuser     bool
	noUISettings  bool
	noCreate      map[string]bool
	diskFull      bool
	consumeDelay  time.Duration
	runTime       time.Duration
	maxUpload     int64
	lastChunked   bool
	lastUploadLen int64
	anyType       bool
	dir           string
}

type fault struct {
	call   string
	status int
	header http.Header
	body   string
}

// New starts a server, closed when the test ends. Its user may add
// documents, tags and correspondents.
func New(t TB) *Server { return start(t, false) }

// NewTLS is New over HTTPS, with httptest's certificate
// (Server.Certificate).
func NewTLS(t TB) *Server { return start(t, true) }

func start(t TB, useTLS bool) *Server {
	s := &Server{objects: map[string][]object{}, tasks: map[string]*taskRecord{}, calls: map[string]int{}, noCreate: map[string]bool{}, dir: t.TempDir(),
		permissions: []string{"view_document", "add_document", "change_document", "view_tag", "add_tag", "view_correspondent", "add_correspondent", "view_uisettings"}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/documents/post_document/", s.api("post_document", s.postDocument))
	mux.HandleFunc("GET /api/documents/", s.api("documents", s.listDocuments))
	mux.HandleFunc("GET /api/tasks/", s.api("tasks", s.getTasks))
	mux.HandleFunc("GET /api/ui_settings/", s.api("ui_settings", s.uiSettings))
	for _, kind := range []string{"tags", "correspondents"} {
		mux.HandleFunc("GET /api/"+kind+"/", s.api(kind, s.listObjects(kind)))
		mux.HandleFunc("POST /api/"+kind+"/", s.api(kind, s.createObject(kind)))
	}
	if useTLS {
		s.Server = httptest.NewTLSServer(mux)
	} else {
		s.Server = httptest.NewServer(mux)
	}
	t.Cleanup(s.Close)
	return s
}

// SetPermissions replaces the user's permissions (codenames such as
// add_document).
func (s *Server) SetPermissions(p ...string) { s.mu.Lock(); s.permissions = p; s.mu.Unlock() }

// NoUISettings refuses /api/ui_settings/ (403), as for a user without the
// UI settings permission.
func (s *Server) NoUISettings() { s.mu.Lock(); s.noUISettings = true; s.mu.Unlock() }

// NoCreate refuses creating objects of kind ("tags", "correspondents").
func (s *Server) NoCreate(kind string) { s.mu.Lock(); s.noCreate[kind] = true; s.mu.Unlock() }

// DiskFull makes consumption fail as on a full disk.
func (s *Server) DiskFull(full bool) { s.mu.Lock(); s.diskFull = full; s.mu.Unlock() }

// SetConsumeDelay keeps new tasks PENDING this long (Paperless's queue
// is busy).
func (s *Server) SetConsumeDelay(d time.Duration) { s.mu.Lock(); s.consumeDelay = d; s.mu.Unlock() }

// SetRunTime keeps new tasks STARTED this long after they leave PENDING
// (a long OCR).
func (s *Server) SetRunTime(d time.Duration) { s.mu.Lock(); s.runTime = d; s.mu.Unlock() }

// SetMaxUpload answers uploads larger than n bytes 413, as a proxy in
// front of Paperless does.
func (s *Server) SetMaxUpload(n int64) { s.mu.Lock(); s.maxUpload = n; s.mu.Unlock() }

// AddObject makes a tag or correspondent and returns its id.
func (s *Server) AddObject(kind, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.objects[kind] = append(s.objects[kind], object{ID: s.seq, Name: name})
	return s.seq
}

// Objects lists the names of kind, sorted.
func (s *Server) Objects(kind string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, o := range s.objects[kind] {
		out = append(out, o.Name)
	}
	sort.Strings(out)
	return out
}

// ObjectName is the name of the tag or correspondent id.
func (s *Server) ObjectName(kind string, id int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.objects[kind] {
		if o.ID == id {
			return o.Name
		}
	}
	return ""
}

// AcceptAnyType makes consumption take any file (Paperless itself refuses
// what its parsers do not read: empty files, unknown binary data), for
// suites that deliver such bytes.
func (s *Server) AcceptAnyType() { s.mu.Lock(); s.anyType = true; s.mu.Unlock() }

// Documents lists the consumed documents, with their content.
func (s *Server) Documents() []Document {
	s.mu.Lock()
	out := make([]Document, 0, len(s.documents))
	for _, d := range s.documents {
		out = append(out, *d)
	}
	s.mu.Unlock()
	for i := range out {
		out[i].Data, _ = os.ReadFile(out[i].disk)
	}
	return out
}

// Open reads the original file of document id.
func (s *Server) Open(id int64) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.documents {
		if d.ID == id {
			return os.Open(d.disk)
		}
	}
	return nil, os.ErrNotExist
}

// Names lists the documents' original file names.
func (s *Server) Names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.documents {
		out = append(out, d.OriginalFilename)
	}
	sort.Strings(out)
	return out
}

// LastUpload says how the last upload came: with a Content-Length (its
// value) or chunked.
func (s *Server) LastUpload() (length int64, chunked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUploadLen, s.lastChunked
}

// Fail answers the next n calls named call ("post_document", "tasks",
// "tags", "correspondents", "ui_settings", "documents"; "" any) with
// status, header and body.
func (s *Server) Fail(call string, n, status int, header http.Header, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{call: call, status: status, header: header, body: body})
	}
}

// Calls is how many times call was made.
func (s *Server) Calls(call string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[call] }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Api-Version", "9")
	w.Header().Set("X-Version", "2.17.1")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck
}

func detail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

func (s *Server) api(call string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls[call]++
		var f *fault
		for i, ff := range s.faults {
			if ff.call == "" || ff.call == call {
				f = &ff
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
				break
			}
		}
		s.mu.Unlock()
		if f != nil {
			io.Copy(io.Discard, r.Body) //nolint:errcheck
			for k, v := range f.header {
				w.Header()[k] = v
			}
			w.WriteHeader(f.status)
			io.WriteString(w, f.body) //nolint:errcheck
			return
		}
		auth := r.Header.Get("Authorization")
		switch {
		case auth == "":
			detail(w, http.StatusUnauthorized, "Authentication credentials were not provided.")
		case auth != "Token "+Token:
			detail(w, http.StatusUnauthorized, "Invalid token.")
		default:
			h(w, r)
		}
	}
}

func (s *Server) may(perm string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.superuser {
		return true
	}
	for _, p := range s.permissions {
		if p == perm {
			return true
		}
	}
	return false
}

func forbidden(w http.ResponseWriter) {
	detail(w, http.StatusForbidden, "You do not have permission to perform this action.")
}

func (s *Server) uiSettings(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	no, perms := s.noUISettings, append([]string(nil), s.permissions...)
	s.mu.Unlock()
	if no {
		forbidden(w)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"user":        map[string]any{"id": 3, "username": "docflow", "is_staff": false, "is_superuser": false, "groups": []int{}},
		"settings":    map[string]any{"version": "2.17.1", "app_title": nil, "update_checking": map[string]any{"backend_setting": "default"}},
		"permissions": perms,
	})
}

func (s *Server) listDocuments(w http.ResponseWriter, r *http.Request) {
	if !s.may("view_document") {
		forbidden(w)
		return
	}
	s.mu.Lock()
	n := len(s.documents)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"count": n, "next": nil, "previous": nil, "all": []int{}, "results": []any{}})
}

func (s *Server) listObjects(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.may("view_" + strings.TrimSuffix(kind, "s")) {
			forbidden(w)
			return
		}
		name := r.URL.Query().Get("name__iexact")
		s.mu.Lock()
		results := []object{}
		for _, o := range s.objects[kind] {
			if name == "" || strings.EqualFold(o.Name, name) {
				results = append(results, o)
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"count": len(results), "next": nil, "previous": nil, "results": results})
	}
}

func (s *Server) createObject(kind string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		no := s.noCreate[kind]
		s.mu.Unlock()
		if no || !s.may("add_"+strings.TrimSuffix(kind, "s")) {
			forbidden(w)
			return
		}
		var in struct {
			Name              string `json:"name"`
			MatchingAlgorithm *int   `json:"matching_algorithm"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || strings.TrimSpace(in.Name) == "" {
			writeJSON(w, http.StatusBadRequest, map[string][]string{"name": {"This field is required."}})
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, o := range s.objects[kind] {
			if strings.EqualFold(o.Name, in.Name) {
				writeJSON(w, http.StatusBadRequest, map[string][]string{"name": {strings.TrimSuffix(kind, "s") + " with this name already exists."}})
				return
			}
		}
		s.seq++
		o := object{ID: s.seq, Name: in.Name}
		s.objects[kind] = append(s.objects[kind], o)
		algo := 1
		if in.MatchingAlgorithm != nil {
			algo = *in.MatchingAlgorithm
		}
		writeJSON(w, http.StatusCreated, map[string]any{"id": o.ID, "slug": strings.ToLower(o.Name), "name": o.Name,
			"match": "", "matching_algorithm": algo, "is_insensitive": true, "document_count": 0})
	}
}

func (s *Server) objectExists(kind string, id int64) bool {
	for _, o := range s.objects[kind] {
		if o.ID == id {
			return true
		}
	}
	return false
}

func (s *Server) postDocument(w http.ResponseWriter, r *http.Request) {
	if !s.may("add_document") {
		forbidden(w)
		return
	}
	s.mu.Lock()
	max := s.maxUpload
	s.lastChunked, s.lastUploadLen = r.ContentLength < 0, r.ContentLength
	s.mu.Unlock()
	if max > 0 && r.ContentLength > max {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, "<html><body><h1>413 Request Entity Too Large</h1></body></html>") //nolint:errcheck
		return
	}
	form, doc, err := s.readUpload(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string][]string{"document": {"The submitted data was not a file. Check the encoding type on the form."}})
		return
	}
	if doc == nil {
		writeJSON(w, http.StatusBadRequest, map[string][]string{"document": {"No file was submitted."}})
		return
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(doc.disk)
		}
	}()
	doc.Title, doc.Created = first(form["title"]), first(form["created"])
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := first(form["correspondent"]); v != "" {
		id, _ := strconv.ParseInt(v, 10, 64)
		if !s.objectExists("correspondents", id) {
			writeJSON(w, http.StatusBadRequest, map[string][]string{"correspondent": {fmt.Sprintf("Invalid pk \"%s\" - object does not exist.", v)}})
			return
		}
		doc.Correspondent = id
	}
	for _, v := range form["tags"] {
		id, _ := strconv.ParseInt(v, 10, 64)
		if !s.objectExists("tags", id) {
			writeJSON(w, http.StatusBadRequest, map[string][]string{"tags": {fmt.Sprintf("Invalid pk \"%s\" - object does not exist.", v)}})
			return
		}
		doc.Tags = append(doc.Tags, id)
	}
	if doc.Created != "" {
		if _, err := time.Parse(time.DateOnly, doc.Created); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string][]string{"created": {"Datetime has wrong format."}})
			return
		}
	}
	s.seq++
	id := fmt.Sprintf("%08x-1111-4222-8333-%012x", s.seq, s.seq)
	start := time.Now().Add(s.consumeDelay)
	t := &taskRecord{id: id, file: doc.OriginalFilename, startAt: start, doneAt: start.Add(s.runTime), status: "SUCCESS"}
	keep = s.consume(t, doc)
	s.tasks[id] = t
	writeJSON(w, http.StatusOK, id)
}

// readUpload streams the multipart upload: the document part to a file
// of the server's (hashing it as it goes), the other fields in memory.
func (s *Server) readUpload(r *http.Request) (map[string][]string, *Document, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, err
	}
	form := map[string][]string{}
	var doc *Document
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return form, doc, nil
		}
		if err != nil {
			if doc != nil {
				os.Remove(doc.disk)
			}
			return nil, nil, err
		}
		if p.FormName() == "document" && p.FileName() != "" && doc == nil {
			f, err := os.CreateTemp(s.dir, "doc-*")
			if err != nil {
				return nil, nil, err
			}
			h := md5.New()
			n, err := io.Copy(io.MultiWriter(f, h), p)
			f.Close()
			doc = &Document{OriginalFilename: p.FileName(), MimeType: p.Header.Get("Content-Type"), Size: n,
				Checksum: hex.EncodeToString(h.Sum(nil)), disk: f.Name()}
			if err != nil {
				os.Remove(doc.disk)
				return nil, nil, err
			}
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(p, 1<<20))
		form[p.FormName()] = append(form[p.FormName()], string(b))
	}
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// consume decides the task's outcome as Paperless's consumer would, and
// reports whether it kept the document. Called locked.
func (s *Server) consume(t *taskRecord, doc *Document) bool {
	for _, d := range s.documents {
		if d.Checksum == doc.Checksum {
			t.status = "FAILURE"
			t.result = fmt.Sprintf("%s: Not consuming %s: It is a duplicate of %s (#%d).", t.file, t.file, d.Title, d.ID)
			return false
		}
	}
	if s.diskFull {
		t.status = "FAILURE"
		t.result = fmt.Sprintf("%s: The following error occurred while storing document %s after parsing: [Errno 28] No space left on device", t.file, t.file)
		return false
	}
	if !s.anyType && !s.readable(doc) {
		t.status = "FAILURE"
		t.result = fmt.Sprintf("%s: Unsupported mime type application/octet-stream", t.file)
		return false
	}
	s.seq++
	doc.ID = s.seq
	if doc.Title == "" {
		doc.Title = strings.TrimSuffix(t.file, ".pdf")
	}
	s.documents = append(s.documents, doc)
	t.document = doc.ID
	t.result = fmt.Sprintf("Success. New document id %d created", doc.ID)
	return true
}

// readable is the fake's stand-in for Paperless's parsers: a PDF (by its
// first bytes) or a text file.
func (s *Server) readable(doc *Document) bool {
	if strings.HasPrefix(doc.MimeType, "text/") {
		return true
	}
	f, err := os.Open(doc.disk)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	return string(head[:n]) == "%PDF"
}

func (s *Server) getTasks(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("task_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	if t, ok := s.tasks[id]; ok {
		status, result, related := t.status, t.result, any(nil)
		if now := time.Now(); now.Before(t.startAt) {
			status, result = "PENDING", ""
		} else if now.Before(t.doneAt) {
			status, result = "STARTED", ""
		} else if t.document > 0 {
			related = strconv.FormatInt(t.document, 10)
		}
		out = append(out, map[string]any{"id": 1, "task_id": t.id, "task_file_name": t.file, "date_created": time.Now().UTC().Format(time.RFC3339),
			"type": "file", "status": status, "result": result, "acknowledged": false, "related_document": related})
	}
	writeJSON(w, http.StatusOK, out)
}
