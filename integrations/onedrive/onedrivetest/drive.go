package onedrivetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
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
	data, err := io.ReadAll(io.LimitReader(r.Body, 250<<20+1))
	if err != nil {
		return
	}
	if len(data) > 250<<20 {
		graphErr(w, http.StatusRequestEntityTooLarge, "invalidRequest", "Maximum request length exceeded.")
		return
	}
	s.commit(w, p, data, r.URL.Query().Get("@microsoft.graph.conflictBehavior"))
}

// commit stores data at p as a finished upload does, answering 201 for a
// new item, 200 for a replaced one.
func (s *Server) commit(w http.ResponseWriter, p string, data []byte, conflict string) {
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
				used += int64(len(f.Data))
			}
		}
		if used+int64(len(data)) > s.quota {
			graphErr(w, http.StatusInsufficientStorage, "quotaLimitReached", "Insufficient Space Available")
			return
		}
	}
	f := &File{Path: p, Data: append([]byte(nil), data...)}
	status := http.StatusCreated
	if exists {
		f.ID, status = old.ID, http.StatusOK
	} else {
		s.nextID++
		f.ID = fmt.Sprintf("01ITEM%06d", s.nextID)
	}
	s.files[key] = f
	s.mkdirLocked(path.Dir(p))
	writeJSON(w, status, item(f.ID, f.Path, int64(len(f.Data)), nil))
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
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("sess%d", s.nextID)
	s.sessions[id] = &session{path: p}
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
	data, err := io.ReadAll(io.LimitReader(r.Body, n))
	if err != nil || int64(len(data)) != n {
		return
	}
	s.mu.Lock()
	if from != int64(len(sess.data)) {
		s.mu.Unlock()
		graphErr(w, http.StatusRequestedRangeNotSatisfiable, "invalidRange", "The uploaded fragment overlaps with data that has already been received.")
		return
	}
	sess.data = append(sess.data, data...)
	got := int64(len(sess.data))
	if got < total {
		s.mu.Unlock()
		writeJSON(w, http.StatusAccepted, map[string]any{"expirationDateTime": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
			"nextExpectedRanges": []string{strconv.FormatInt(got, 10) + "-"}})
		return
	}
	delete(s.sessions, id)
	s.mu.Unlock()
	s.commit(w, sess.path, sess.data, r.URL.Query().Get("conflict"))
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
			items = append(items, item(f.ID, f.Path, int64(len(f.Data)), nil))
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
			s.recycled = append(s.recycled, f.Path)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	graphErr(w, http.StatusNotFound, "itemNotFound", "Item does not exist")
}
