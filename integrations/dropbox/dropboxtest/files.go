package dropboxtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type commitArg struct {
	Path       string `json:"path"`
	Mode       any    `json:"mode"`
	Autorename bool   `json:"autorename"`
}

func (c commitArg) mode() string {
	switch m := c.Mode.(type) {
	case string:
		return m
	case map[string]any:
		t, _ := m[".tag"].(string)
		return t
	}
	return "add"
}

type cursorArg struct {
	SessionID string `json:"session_id"`
	Offset    int64  `json:"offset"`
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request, route string, raw json.RawMessage, body *spool) {
	var arg commitArg
	if err := json.Unmarshal(raw, &arg); err != nil {
		badInput(w, route, "could not decode input as JSON")
		return
	}
	s.commit(w, route, arg, body, "")
}

func (s *Server) sessionStart(w http.ResponseWriter, r *http.Request, route string, raw json.RawMessage, body *spool) {
	f, err := os.CreateTemp(s.dir, "session-*")
	if err != nil {
		return
	}
	f.Close()
	sess := &spool{path: f.Name()}
	if err := appendTo(sess.path, body); err != nil {
		return
	}
	sess.size = body.size
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("session-%d", s.nextID)
	s.sessions[id] = sess
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"session_id": id})
}

func (s *Server) appendV2(w http.ResponseWriter, r *http.Request, route string, raw json.RawMessage, body *spool) {
	var arg struct {
		Cursor cursorArg `json:"cursor"`
	}
	if err := json.Unmarshal(raw, &arg); err != nil {
		badInput(w, route, "could not decode input as JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[arg.Cursor.SessionID]
	switch {
	case !ok:
		apiErr(w, http.StatusConflict, "not_found/..", map[string]string{".tag": "not_found"})
	case sess.size != arg.Cursor.Offset:
		apiErr(w, http.StatusConflict, "incorrect_offset/..", map[string]any{".tag": "incorrect_offset", "correct_offset": sess.size})
	default:
		if err := appendTo(sess.path, body); err != nil {
			return
		}
		sess.size += body.size
		writeJSON(w, http.StatusOK, nil)
	}
}

func (s *Server) finish(w http.ResponseWriter, r *http.Request, route string, raw json.RawMessage, body *spool) {
	var arg struct {
		Cursor cursorArg `json:"cursor"`
		Commit commitArg `json:"commit"`
	}
	if err := json.Unmarshal(raw, &arg); err != nil {
		badInput(w, route, "could not decode input as JSON")
		return
	}
	s.mu.Lock()
	sess, ok := s.sessions[arg.Cursor.SessionID]
	s.mu.Unlock()
	switch {
	case !ok:
		apiErr(w, http.StatusConflict, "lookup_failed/not_found/..", map[string]any{".tag": "lookup_failed", "lookup_failed": map[string]string{".tag": "not_found"}})
	case sess.size != arg.Cursor.Offset:
		apiErr(w, http.StatusConflict, "lookup_failed/incorrect_offset/..", map[string]any{".tag": "lookup_failed",
			"lookup_failed": map[string]any{".tag": "incorrect_offset", "correct_offset": sess.size}})
	default:
		if err := appendTo(sess.path, body); err != nil {
			return
		}
		sess.size += body.size
		if s.commit(w, route, arg.Commit, sess, arg.Cursor.SessionID) {
			s.mu.Lock()
			delete(s.sessions, arg.Cursor.SessionID)
			s.mu.Unlock()
		}
	}
}

// commit stores data at arg.Path as Dropbox's upload and finish do,
// answering the metadata or the error; it reports whether it stored (the
// spool's file then belongs to the store).
func (s *Server) commit(w http.ResponseWriter, route string, arg commitArg, data *spool, session string) bool {
	p := arg.Path
	if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || path.Clean(p) != p {
		badInput(w, route, fmt.Sprintf("request body: path: %q did not match pattern", p))
		return false
	}
	fail := func(reason string) bool {
		apiErr(w, http.StatusConflict, "path/"+reason+"/..", map[string]any{".tag": "path",
			"reason": map[string]string{".tag": reason}, "upload_session_id": session})
		return false
	}
	key := strings.ToLower(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ro := range s.readOnly {
		if key == ro || strings.HasPrefix(key, strings.TrimSuffix(ro, "/")+"/") {
			return fail("no_write_permission")
		}
	}
	old, exists := s.files[key]
	if exists && arg.mode() != "overwrite" && !arg.Autorename {
		return fail("conflict")
	}
	if s.quota > 0 {
		var used int64
		for k, f := range s.files {
			if k != key {
				used += f.Size
			}
		}
		if used+data.size > s.quota {
			return fail("insufficient_space")
		}
	}
	s.nextID++
	disk := filepath.Join(s.dir, fmt.Sprintf("file-%d", s.nextID))
	if err := os.Rename(data.path, disk); err != nil {
		return false
	}
	f := &File{PathDisplay: p, Size: data.size, disk: disk}
	if exists {
		f.ID = old.ID
		os.Remove(old.disk)
	} else {
		f.ID = fmt.Sprintf("id:file%d", s.nextID)
	}
	s.files[key] = f
	s.mkdirLocked(path.Dir(p))
	writeJSON(w, http.StatusOK, fileMeta(f))
	return true
}

func fileMeta(f *File) map[string]any {
	now := time.Now().UTC().Format(time.RFC3339)
	return map[string]any{".tag": "file", "name": path.Base(f.PathDisplay), "id": f.ID,
		"path_lower": strings.ToLower(f.PathDisplay), "path_display": f.PathDisplay, "size": f.Size,
		"rev": "015f0000000000000001", "client_modified": now, "server_modified": now, "is_downloadable": true}
}

func (s *Server) listFolder(w http.ResponseWriter, r *http.Request, route string, raw json.RawMessage, body *spool) {
	var arg struct {
		Path  string `json:"path"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(raw, &arg); err != nil {
		badInput(w, route, "could not decode input as JSON")
		return
	}
	if arg.Path != "" && (!strings.HasPrefix(arg.Path, "/") || arg.Path == "/") {
		badInput(w, route, fmt.Sprintf("request body: path: %q did not match pattern '(/(.|[\\r\\n])*)?|id:.*|(ns:[0-9]+(/.*)?)'", arg.Path))
		return
	}
	dir := strings.ToLower(arg.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.folders[dir]; dir != "" && !ok {
		apiErr(w, http.StatusConflict, "path/not_found/..", map[string]any{".tag": "path", "path": map[string]string{".tag": "not_found"}})
		return
	}
	entries := []map[string]any{}
	for k, display := range s.folders {
		if path.Dir(k) == dir || (dir == "" && path.Dir(k) == "/") {
			entries = append(entries, map[string]any{".tag": "folder", "name": path.Base(display), "id": "id:" + k,
				"path_lower": k, "path_display": display})
		}
	}
	for k, f := range s.files {
		if path.Dir(k) == dir || (dir == "" && path.Dir(k) == "/") {
			entries = append(entries, fileMeta(f))
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i]["path_lower"].(string) < entries[j]["path_lower"].(string) })
	more := false
	if arg.Limit > 0 && len(entries) > arg.Limit {
		entries, more = entries[:arg.Limit], true
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "cursor": "cursor-1", "has_more": more})
}

func (s *Server) deleteV2(w http.ResponseWriter, r *http.Request, route string, raw json.RawMessage, body *spool) {
	var arg struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(raw, &arg); err != nil {
		badInput(w, route, "could not decode input as JSON")
		return
	}
	key := strings.ToLower(arg.Path)
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[key]
	if !ok {
		apiErr(w, http.StatusConflict, "path_lookup/not_found/..", map[string]any{".tag": "path_lookup", "path_lookup": map[string]string{".tag": "not_found"}})
		return
	}
	delete(s.files, key)
	os.Remove(f.disk)
	writeJSON(w, http.StatusOK, map[string]any{"metadata": fileMeta(f)})
}
