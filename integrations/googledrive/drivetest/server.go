// Package drivetest is an in-process Google Drive for tests: Google's
// OAuth token endpoint (refresh_token grant) and the Drive API v3 calls
// the Google Drive client makes — files.list with the query clauses it
// uses, multipart and media uploads, resumable uploads (308 Resume
// Incomplete with Range), files.delete — answering with the statuses and
// error bodies of Drive's reference (401 authError, 403
// storageQuotaExceeded, insufficientFilePermissions and
// userRateLimitExceeded, 404 notFound, 429 with Retry-After), with faults
// a test can switch on. Files live in memory.
package drivetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// Credentials the server accepts.
const (
	ClientID     = "test-client-id.apps.googleusercontent.com"
	ClientSecret = "test-client-secret"
	RefreshToken = "1//test-refresh-token"
)

// File is a stored file or folder.
type File struct {
	ID, Name, Parent, MimeType string
	Size                       int64
	// Data is the content, read from disk by Server.Files.
	Data    []byte
	Created int
	disk    string
}

// TB is what the server needs of a test.
type TB interface {
	Cleanup(func())
	TempDir() string
}

type session struct {
	fileID string // "" creates
	name   string
	parent string
	mime   string
	total  int64
	disk   string
	size   int64
}

// Server is the fake Google Drive. Its URL is the API host; the token
// endpoint is URL+"/token".
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	tokens    map[string]time.Time
	files     map[string]*File
	sessions  map[string]*session
	seq       int
	quota     int64
	readOnly  map[string]bool
	faults    []fault
	calls     map[string]int
	refreshes int
	dir       string
}

type fault struct {
	call   string
	status int
	header http.Header
	body   string
}

// New starts a server, closed when the test ends. What it stores lives
// in a folder of the test's, not in memory.
func New(t TB) *Server {
	s := &Server{tokens: map[string]time.Time{}, files: map[string]*File{}, sessions: map[string]*session{},
		readOnly: map[string]bool{}, calls: map[string]int{}, dir: t.TempDir()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("GET /drive/v3/files", s.api("list", s.list))
	mux.HandleFunc("DELETE /drive/v3/files/{id}", s.api("delete", s.remove))
	mux.HandleFunc("POST /upload/drive/v3/files", s.api("upload", s.uploadNew))
	mux.HandleFunc("PATCH /upload/drive/v3/files/{id}", s.api("upload", s.uploadExisting))
	mux.HandleFunc("PUT /upload/drive/v3/files", s.api("chunk", s.chunk))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TokenURL is the token endpoint to configure.
func (s *Server) TokenURL() string { return s.URL + "/token" }

// Mkdir makes a folder called name in parent ("root") and returns its id.
func (s *Server) Mkdir(parent, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("folder%d", s.seq)
	s.files[id] = &File{ID: id, Name: name, Parent: parent, MimeType: "application/vnd.google-apps.folder", Created: s.seq}
	return id
}

// ReadOnly makes the folder refuse new files and new versions of its
// files (403 insufficientFilePermissions).
func (s *Server) ReadOnly(folderID string) { s.mu.Lock(); s.readOnly[folderID] = true; s.mu.Unlock() }

// SetQuota limits the bytes all files may take (0: unlimited).
func (s *Server) SetQuota(bytes int64) { s.mu.Lock(); s.quota = bytes; s.mu.Unlock() }

// ExpireTokens expires every access token issued so far.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	for k := range s.tokens {
		s.tokens[k] = time.Time{}
	}
	s.mu.Unlock()
}

// Fail answers the next n calls named call ("token", "list", "upload",
// "chunk", "delete"; "" any) with status, header and body.
func (s *Server) Fail(call string, n, status int, header http.Header, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{call: call, status: status, header: header, body: body})
	}
}

// RateLimit answers the next n calls named call 429 rateLimitExceeded
// with Retry-After.
func (s *Server) RateLimit(call string, n, retryAfter int) {
	s.Fail(call, n, http.StatusTooManyRequests, http.Header{"Retry-After": {fmt.Sprint(retryAfter)}, "Content-Type": {"application/json"}},
		errBody(http.StatusTooManyRequests, "rateLimitExceeded", "Rate Limit Exceeded", "RESOURCE_EXHAUSTED"))
}

// UserRateLimit answers the next n calls named call as Drive throttles a
// user: 403 userRateLimitExceeded, no Retry-After.
func (s *Server) UserRateLimit(call string, n int) {
	s.Fail(call, n, http.StatusForbidden, http.Header{"Content-Type": {"application/json"}},
		errBody(http.StatusForbidden, "userRateLimitExceeded", "User Rate Limit Exceeded", "PERMISSION_DENIED"))
}

// Files lists the stored files (not folders) in folder, by name.
func (s *Server) Files(folder string) []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []File
	for _, f := range s.files {
		if f.Parent == folder && !strings.HasSuffix(f.MimeType, ".folder") {
			out = append(out, *f)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	for i := range out {
		out[i].Data, _ = os.ReadFile(out[i].disk)
	}
	return out
}

// Open reads the file whose id is id.
func (s *Server) Open(id string) (io.ReadCloser, error) {
	s.mu.Lock()
	f, ok := s.files[id]
	s.mu.Unlock()
	if !ok || f.disk == "" {
		return nil, os.ErrNotExist
	}
	return os.Open(f.disk)
}

// Names lists the names of the files (not folders) in folder.
func (s *Server) Names(folder string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, f := range s.files {
		if f.Parent == folder && !strings.HasSuffix(f.MimeType, ".folder") {
			out = append(out, f.Name)
		}
	}
	sort.Strings(out)
	return out
}

// spool writes r to a new file of the server's and returns its path and
// size.
func (s *Server) spool(r io.Reader) (string, int64, error) {
	f, err := os.CreateTemp(s.dir, "body-*")
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", 0, err
	}
	return f.Name(), n, nil
}

// Calls is how many times call was made.
func (s *Server) Calls(call string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[call] }

// Refreshes is how many access tokens were issued.
func (s *Server) Refreshes() int { s.mu.Lock(); defer s.mu.Unlock(); return s.refreshes }

// Sessions is how many resumable uploads are unfinished.
func (s *Server) Sessions() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.sessions) }

func errBody(code int, reason, msg, status string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg, "status": status,
		"errors": []map[string]string{{"domain": "global", "reason": reason, "message": msg}}}})
	return string(b)
}

func driveErr(w http.ResponseWriter, code int, reason, msg, status string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	io.WriteString(w, errBody(code, reason, msg, status)) //nolint:errcheck
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck
}

func (s *Server) takeFault(call string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[call]++
	for i, f := range s.faults {
		if f.call == "" || f.call == call {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return &f
		}
	}
	return nil
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if f := s.takeFault("token"); f != nil {
		f.write(w)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	switch {
	case r.PostForm.Get("grant_type") != "refresh_token":
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "Invalid grant_type: "})
	case r.PostForm.Get("client_id") != ClientID || r.PostForm.Get("client_secret") != ClientSecret:
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "The OAuth client was not found."})
	case r.PostForm.Get("refresh_token") != RefreshToken:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
	default:
		s.mu.Lock()
		s.refreshes++
		tok := fmt.Sprintf("ya29.test-%d", s.refreshes)
		s.tokens[tok] = time.Now().Add(time.Hour)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer",
			"scope": "https://www.googleapis.com/auth/drive.file"})
	}
}

func (f *fault) write(w http.ResponseWriter) {
	for k, v := range f.header {
		w.Header()[k] = v
	}
	w.WriteHeader(f.status)
	io.WriteString(w, f.body) //nolint:errcheck
}

// api checks the bearer token as Drive does.
func (s *Server) api(call string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if f := s.takeFault(call); f != nil {
			io.Copy(io.Discard, r.Body) //nolint:errcheck
			f.write(w)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		exp, known := s.tokens[tok]
		s.mu.Unlock()
		if !ok || !known || time.Now().After(exp) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
			driveErr(w, http.StatusUnauthorized, "authError",
				"Request had invalid authentication credentials. Expected OAuth 2 access token.", "UNAUTHENTICATED")
			return
		}
		h(w, r)
	}
}
