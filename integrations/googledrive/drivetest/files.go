package drivetest

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const chunkUnit = 256 << 10

// token of Drive's query language: a quoted literal (lit true) or a word.
type qtoken struct {
	text string
	lit  bool
}

func lexQuery(q string) ([]qtoken, error) {
	var out []qtoken
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == ' ':
			i++
		case c == '\'':
			var sb strings.Builder
			i++
			for ; i < len(q) && q[i] != '\''; i++ {
				if q[i] == '\\' && i+1 < len(q) {
					i++
				}
				sb.WriteByte(q[i])
			}
			if i >= len(q) {
				return nil, fmt.Errorf("unterminated string")
			}
			i++
			out = append(out, qtoken{sb.String(), true})
		default:
			j := i
			for j < len(q) && q[j] != ' ' {
				j++
			}
			out = append(out, qtoken{q[i:j], false})
			i = j
		}
	}
	return out, nil
}

// filter is what the clauses the client sends select.
type filter struct {
	name, parent, mime *string
	trashedFalse       bool
}

// parseQuery reads clauses joined by "and": name = '…', '…' in parents,
// mimeType = '…', trashed = false.
func parseQuery(q string) (filter, error) {
	toks, err := lexQuery(q)
	var f filter
	if err != nil {
		return f, err
	}
	for len(toks) > 0 {
		switch {
		case len(toks) >= 3 && !toks[0].lit && toks[0].text == "name" && toks[1].text == "=" && toks[2].lit:
			f.name = &toks[2].text
		case len(toks) >= 3 && !toks[0].lit && toks[0].text == "mimeType" && toks[1].text == "=" && toks[2].lit:
			f.mime = &toks[2].text
		case len(toks) >= 3 && toks[0].lit && toks[1].text == "in" && toks[2].text == "parents":
			f.parent = &toks[0].text
		case len(toks) >= 3 && toks[0].text == "trashed" && toks[1].text == "=" && toks[2].text == "false":
			f.trashedFalse = true
		default:
			return f, fmt.Errorf("invalid query near %q", toks[0].text)
		}
		toks = toks[3:]
		if len(toks) > 0 {
			if toks[0].lit || toks[0].text != "and" {
				return f, fmt.Errorf("invalid query near %q", toks[0].text)
			}
			toks = toks[1:]
		}
	}
	return f, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	f, err := parseQuery(r.URL.Query().Get("q"))
	if err != nil {
		driveErr(w, http.StatusBadRequest, "invalid", "Invalid Value", "INVALID_ARGUMENT")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.parent != nil && *f.parent != "root" {
		if p, ok := s.files[*f.parent]; !ok || !strings.HasSuffix(p.MimeType, ".folder") {
			driveErr(w, http.StatusNotFound, "notFound", "File not found: "+*f.parent+".", "NOT_FOUND")
			return
		}
	}
	var found []*File
	for _, file := range s.files {
		if (f.name == nil || file.Name == *f.name) && (f.parent == nil || file.Parent == *f.parent) && (f.mime == nil || file.MimeType == *f.mime) {
			found = append(found, file)
		}
	}
	if r.URL.Query().Get("orderBy") == "name" {
		sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
	} else {
		sort.Slice(found, func(i, j int) bool { return found[i].Created < found[j].Created })
	}
	size, _ := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if size <= 0 {
		size = 100
	}
	out := map[string]any{}
	if len(found) > size {
		found, out["nextPageToken"] = found[:size], "page-2"
	}
	files := []map[string]string{}
	for _, file := range found {
		files = append(files, map[string]string{"id": file.ID, "name": file.Name})
	}
	out["files"] = files
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.PathValue("id")
	if _, ok := s.files[id]; !ok {
		driveErr(w, http.StatusNotFound, "notFound", "File not found: "+id+".", "NOT_FOUND")
		return
	}
	if f := s.files[id]; f.disk != "" {
		os.Remove(f.disk)
	}
	delete(s.files, id)
	w.WriteHeader(http.StatusNoContent)
}

// checkWrite answers a refused write of data into parent (or of file id's
// content); it reports whether the write may go on. Called locked.
func (s *Server) checkWrite(w http.ResponseWriter, parent, id string, size int64) bool {
	if parent != "root" {
		if p, ok := s.files[parent]; !ok || !strings.HasSuffix(p.MimeType, ".folder") {
			driveErr(w, http.StatusNotFound, "notFound", "File not found: "+parent+".", "NOT_FOUND")
			return false
		}
	}
	if s.readOnly[parent] {
		driveErr(w, http.StatusForbidden, "insufficientFilePermissions",
			"The user does not have sufficient permissions for this file.", "PERMISSION_DENIED")
		return false
	}
	if s.quota > 0 {
		var used int64
		for k, f := range s.files {
			if k != id {
				used += f.Size
			}
		}
		if used+size > s.quota {
			driveErr(w, http.StatusForbidden, "storageQuotaExceeded", "The user's Drive storage quota has been exceeded.", "PERMISSION_DENIED")
			return false
		}
	}
	return true
}

// store creates or updates a file with the bytes in disk (which it takes)
// and answers its id and name. Called locked.
func (s *Server) store(w http.ResponseWriter, id, name, parent, mimeType, disk string, size int64) {
	if id == "" {
		s.seq++
		id = fmt.Sprintf("file%d", s.seq)
		s.files[id] = &File{ID: id, Name: name, Parent: parent, MimeType: mimeType, Created: s.seq}
	}
	f := s.files[id]
	s.seq++
	stored := filepath.Join(s.dir, fmt.Sprintf("file-%d", s.seq))
	if err := os.Rename(disk, stored); err != nil {
		driveErr(w, http.StatusInternalServerError, "backendError", "Backend Error", "INTERNAL")
		return
	}
	if f.disk != "" {
		os.Remove(f.disk)
	}
	f.disk, f.Size = stored, size
	if mimeType != "" {
		f.MimeType = mimeType
	}
	writeJSON(w, http.StatusOK, map[string]string{"kind": "drive#file", "id": f.ID, "name": f.Name, "mimeType": f.MimeType})
}

type metadata struct {
	Name    string   `json:"name"`
	Parents []string `json:"parents"`
}

func (m metadata) parent() string {
	if len(m.Parents) == 0 {
		return "root"
	}
	return m.Parents[0]
}

// uploadNew serves POST /upload/drive/v3/files: uploadType multipart or
// resumable.
func (s *Server) uploadNew(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Query().Get("uploadType") {
	case "multipart":
		mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "multipart/related" {
			driveErr(w, http.StatusBadRequest, "badContent", "Bad content type. Please use multipart.", "INVALID_ARGUMENT")
			return
		}
		mr := multipart.NewReader(r.Body, params["boundary"])
		var meta metadata
		var disk, dataType string
		var size int64
		defer func() {
			if disk != "" {
				os.Remove(disk)
			}
		}()
		for i := 0; ; i++ {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				driveErr(w, http.StatusBadRequest, "badContent", "Malformed multipart body.", "INVALID_ARGUMENT")
				return
			}
			if i == 0 {
				b, _ := io.ReadAll(io.LimitReader(p, 1<<20))
				if json.Unmarshal(b, &meta) != nil {
					driveErr(w, http.StatusBadRequest, "parseError", "Parse Error", "INVALID_ARGUMENT")
					return
				}
			} else if disk == "" {
				if disk, size, err = s.spool(p); err != nil {
					return
				}
				dataType = p.Header.Get("Content-Type")
			}
		}
		if disk == "" {
			if disk, size, _ = s.spool(strings.NewReader("")); disk == "" {
				return
			}
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.checkWrite(w, meta.parent(), "", size) {
			s.store(w, "", meta.Name, meta.parent(), dataType, disk, size)
		}
	case "resumable":
		var meta metadata
		if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&meta); err != nil {
			driveErr(w, http.StatusBadRequest, "parseError", "Parse Error", "INVALID_ARGUMENT")
			return
		}
		s.startSession(w, r, &session{name: meta.Name, parent: meta.parent()})
	default:
		driveErr(w, http.StatusBadRequest, "invalid", "Invalid Value", "INVALID_ARGUMENT")
	}
}

// uploadExisting serves PATCH /upload/drive/v3/files/{id}: uploadType
// media or resumable.
func (s *Server) uploadExisting(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok {
		driveErr(w, http.StatusNotFound, "notFound", "File not found: "+id+".", "NOT_FOUND")
		return
	}
	switch r.URL.Query().Get("uploadType") {
	case "media":
		disk, size, err := s.spool(r.Body)
		if err != nil {
			return
		}
		defer os.Remove(disk)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.checkWrite(w, f.Parent, id, size) {
			s.store(w, id, "", "", r.Header.Get("Content-Type"), disk, size)
		}
	case "resumable":
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)) //nolint:errcheck
		s.startSession(w, r, &session{fileID: id, parent: f.Parent})
	default:
		driveErr(w, http.StatusBadRequest, "invalid", "Invalid Value", "INVALID_ARGUMENT")
	}
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, sess *session) {
	sess.mime = r.Header.Get("X-Upload-Content-Type")
	sess.total = -1
	if v := r.Header.Get("X-Upload-Content-Length"); v != "" {
		sess.total, _ = strconv.ParseInt(v, 10, 64)
	}
	f, err := os.CreateTemp(s.dir, "session-*")
	if err != nil {
		return
	}
	f.Close()
	sess.disk = f.Name()
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("upload%d", s.seq)
	s.sessions[id] = sess
	s.mu.Unlock()
	w.Header().Set("Location", s.URL+"/upload/drive/v3/files?uploadType=resumable&upload_id="+id)
	w.WriteHeader(http.StatusOK)
}

// chunk serves a PUT to a resumable session: Content-Range bytes a-b/total
// (or */total); 308 with Range while incomplete, the file when complete.
func (s *Server) chunk(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("upload_id")
	s.mu.Lock()
	sess, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		driveErr(w, http.StatusNotFound, "notFound", "Upload session not found.", "NOT_FOUND")
		return
	}
	var from, to, total int64
	cr := r.Header.Get("Content-Range")
	if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &from, &to, &total); err != nil || to < from || to >= total {
		driveErr(w, http.StatusBadRequest, "badRequest", "Failed to parse Content-Range header.", "INVALID_ARGUMENT")
		return
	}
	n := to - from + 1
	if (to != total-1 && n%chunkUnit != 0) || r.ContentLength != n || (sess.total >= 0 && total != sess.total) {
		driveErr(w, http.StatusBadRequest, "badRequest", "Invalid chunk.", "INVALID_ARGUMENT")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if from == sess.size {
		out, err := os.OpenFile(sess.disk, os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return
		}
		got, err := io.Copy(out, io.LimitReader(r.Body, n))
		out.Close()
		if err != nil || got != n {
			return
		}
		sess.size += n
	}
	if sess.size < total {
		if sess.size > 0 {
			w.Header().Set("Range", fmt.Sprintf("bytes=0-%d", sess.size-1))
		}
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusPermanentRedirect)
		return
	}
	delete(s.sessions, id)
	if s.checkWrite(w, sess.parent, sess.fileID, sess.size) {
		s.store(w, sess.fileID, sess.name, sess.parent, sess.mime, sess.disk, sess.size)
	}
}
