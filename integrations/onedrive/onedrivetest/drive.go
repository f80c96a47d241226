package onedrivetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

const (
	fragmentUnit = 320 << 10
	maxFragment  = 60 << 20
)

// graph serves /v1.0/me/drive/…: root:/<path>:/content,
// root:/<path>:/createUploadSession, root[:/<path>:]/children and
// items/<id>.
func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/v1.0/me/drive/")
	var p, action string
	switch {
	case rest == "root/children":
		p, action = "", "children"
	case strings.HasPrefix(rest, "root:/"):
		i := strings.LastIndex(rest, ":/")
		if i < len("root:") {
			graphErr(w, http.StatusBadRequest, "invalidRequest", "Invalid request")
			return
		}
		p, action = rest[len("root:"):i], rest[i+2:]
	case strings.HasPrefix(rest, "items/") && r.Method == http.MethodDelete:
		action = "delete"
	default:
		graphErr(w, http.StatusBadRequest, "invalidRequest", "Invalid request")
		return
	}
	if f := s.takeFault(action); f != nil {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		f.write(w)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	switch {
	case action == "content" && r.Method == http.MethodPut:
		s.simpleUpload(w, r, p)
	case action == "createUploadSession" && r.Method == http.MethodPost:
		s.createSession(w, r, p)
	case action == "children" && r.Method == http.MethodGet:
		s.children(w, r, p)
	case action == "delete":
		s.deleteItem(w, strings.TrimPrefix(rest, "items/"))
	default:
		graphErr(w, http.StatusMethodNotAllowed, "invalidRequest", "Method not allowed")
	}
}

func (s *Server) simpleUpload(w http.ResponseWriter, r *http.Request, p string) {
	disk, size, err := s.spool(r.Body, 250<<20)
	if err != nil {
		return
	}
	defer os.Remove(disk)
	if size > 250<<20 {
		graphErr(w, http.StatusRequestEntityTooLarge, "invalidRequest", "Maximum request length exceeded.")
		return
	}
	s.commit(w, p, disk, size, r.URL.Query().Get("@microsoft.graph.conflictBehavior"))
}

// commit stores the bytes in disk at p as a finished upload does,
// answering 201 for a new item, 200 for a replaced one.
func (s *Server) commit(w http.ResponseWriter, p, disk string, size int64, conflict string) {
	key := strings.ToLower(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ro := range s.readOnly {
		if key == ro || strings.HasPrefix(key, strings.TrimSuffix(ro, "/")+"/") {
			graphErr(w, http.StatusForbidden, "accessDenied", "Access denied")
			return
		}
	}
	old, exists := s.files[key]
	if exists && conflict != "replace" {
		graphErr(w, http.StatusConflict, "nameAlreadyExists", "The specified item name already exists.")
		return
	}
	if s.quota > 0 {
		var used int64
		for k, f := range s.files {
			if k != key {
				used += f.Size
			}
		}
		if used+size > s.quota {
			graphErr(w, http.StatusInsufficientStorage, "quotaLimitReached", "Insufficient Space Available")
			return
		}
	}
	s.nextID++
	stored := filepath.Join(s.dir, fmt.Sprintf("file-%d", s.nextID))
	if err := os.Rename(disk, stored); err != nil {
		graphErr(w, http.StatusInternalServerError, "generalException", "store failed")
		return
	}
	f := &File{Path: p, Size: size, disk: stored}
	status := http.StatusCreated
	if exists {
		f.ID, status = old.ID, http.StatusOK
		os.Remove(old.disk)
	} else {
		f.ID = fmt.Sprintf("01ITEM%06d", s.nextID)
	}
	s.files[key] = f
	s.mkdirLocked(path.Dir(p))
	writeJSON(w, status, item(f.ID, f.Path, f.Size, nil))
}

func item(id, p string, size int64, childCount *int) map[string]any {
	m := map[string]any{"id": id, "name": path.Base(p), "size": size,
		"parentReference":      map[string]string{"driveId": "b!test", "path": "/drive/root:" + strings.TrimSuffix(path.Dir(p), "/")},
		"lastModifiedDateTime": time.Now().UTC().Format(time.RFC3339)}
	if childCount != nil {
		m["folder"] = map[string]int{"childCount": *childCount}
	} else {
		m["file"] = map[string]string{"mimeType": "application/octet-stream"}
	}
	return m
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, p string) {
	var body struct {
		Item map[string]any `json:"item"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&body); err != nil && err != io.EOF {
		graphErr(w, http.StatusBadRequest, "invalidRequest", "Invalid request body")
		return
	}
	conflict, _ := body.Item["@microsoft.graph.conflictBehavior"].(string)
	f, err := os.CreateTemp(s.dir, "session-*")
	if err != nil {
		return
	}
	f.Close()
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("sess%d", s.nextID)
	s.sessions[id] = &session{path: p, disk: f.Name()}
	s.mu.Unlock()
	if conflict == "" {
		conflict = "fail"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"uploadUrl":          s.URL + "/upload/" + id + "?conflict=" + conflict,
		"expirationDateTime": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		"nextExpectedRanges": []string{"0-"},
	})
}

// upload serves an upload session's URL: ranged PUTs, and DELETE to
// cancel it.
func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if f := s.takeFault("fragment"); f != nil {
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		f.write(w)
		return
	}
	s.mu.Lock()
	sess, ok := s.sessions[id]
	s.mu.Unlock()
	if !ok {
		graphErr(w, http.StatusNotFound, "itemNotFound", "The upload session was not found")
		return
	}
	if r.Method == http.MethodDelete {
		s.mu.Lock()
		delete(s.sessions, id)
		s.mu.Unlock()
		os.Remove(sess.disk)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Header.Get("Authorization") != "" {
		graphErr(w, http.StatusUnauthorized, "unauthenticated", "An upload URL takes no Authorization header")
		return
	}
	var from, to, total int64
	if _, err := fmt.Sscanf(r.Header.Get("Content-Range"), "bytes %d-%d/%d", &from, &to, &total); err != nil || to < from || to >= total {
		graphErr(w, http.StatusBadRequest, "invalidRequest", "Invalid Content-Range header")
		return
	}
	n := to - from + 1
	if n > maxFragment || (to != total-1 && n%fragmentUnit != 0) || r.ContentLength != n {
		graphErr(w, http.StatusBadRequest, "invalidRequest", "The fragment size must be a multiple of 320 KiB")
		return
	}
	done, err := s.appendFragment(w, id, sess, from, n, total, r.Body)
	if err != nil || !done {
		return
	}
	s.commit(w, sess.path, sess.disk, sess.size, r.URL.Query().Get("conflict"))
}

// appendFragment adds the n bytes of body at from to the session; done
// when it then holds all total bytes (the session is over). Otherwise
// the answer is written here.
func (s *Server) appendFragment(w http.ResponseWriter, id string, sess *session, from, n, total int64, body io.Reader) (done bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if from != sess.size {
		graphErr(w, http.StatusRequestedRangeNotSatisfiable, "invalidRange", "The uploaded fragment overlaps with data that has already been received.")
		return false, nil
	}
	out, err := os.OpenFile(sess.disk, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return false, err
	}
	got, err := io.Copy(out, io.LimitReader(body, n))
	out.Close()
	if err == nil && got != n {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return false, err
	}
	sess.size += n
	if sess.size < total {
		writeJSON(w, http.StatusAccepted, map[string]any{"expirationDateTime": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			"nextExpectedRanges": []string{strconv.FormatInt(sess.size, 10) + "-"}})
		return false, nil
	}
	delete(s.sessions, id)
	return true, nil
}

// Sessions is how many upload sessions are open (neither finished nor
// cancelled).
func (s *Server) Sessions() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.sessions) }

func (s *Server) children(w http.ResponseWriter, r *http.Request, p string) {
	key := strings.ToLower(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.folders[key]; key != "" && !ok {
		graphErr(w, http.StatusNotFound, "itemNotFound", "Item does not exist")
		return
	}
	parent := key
	if parent == "" {
		parent = "/"
	}
	var items []map[string]any
	for k, display := range s.folders {
		if path.Dir(k) == parent {
			n := 0
			for k2 := range s.folders {
				if path.Dir(k2) == k {
					n++
				}
			}
			for k2 := range s.files {
				if path.Dir(k2) == k {
					n++
				}
			}
			items = append(items, item("F"+k, display, 0, &n))
		}
	}
	for k, f := range s.files {
		if path.Dir(k) == parent {
			items = append(items, item(f.ID, f.Path, f.Size, nil))
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i]["name"].(string) < items[j]["name"].(string) })
	skip, _ := strconv.Atoi(r.URL.Query().Get("$skiptoken"))
	top, _ := strconv.Atoi(r.URL.Query().Get("$top"))
	if top <= 0 {
		top = 200
	}
	items = items[min(skip, len(items)):]
	out := map[string]any{}
	if len(items) > top {
		q := r.URL.Query()
		q.Set("$skiptoken", strconv.Itoa(skip+top))
		out["@odata.nextLink"] = s.URL + r.URL.Path + "?" + q.Encode()
		items = items[:top]
	}
	if items == nil {
		items = []map[string]any{}
	}
	out["value"] = items
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteItem(w http.ResponseWriter, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, f := range s.files {
		if f.ID == id {
			delete(s.files, k)
			os.Remove(f.disk)
			s.recycled = append(s.recycled, f.Path)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	graphErr(w, http.StatusNotFound, "itemNotFound", "Item does not exist")
}
