// Package dropboxtest is an in-process Dropbox for tests: the token
// endpoint (refresh_token grant), /files/upload, the upload sessions
// (start, append_v2, finish), /files/list_folder and /files/delete_v2,
// answering with the statuses and error bodies of Dropbox's API
// reference (401 expired_access_token, 409 path/insufficient_space, 429
// with Retry-After, 400 in plain text for a malformed call), with faults
// a test can switch on. Files live in memory.
package dropboxtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"
)

// Credentials the server accepts.
const (
	AppKey       = "test-app-key"
	AppSecret    = "test-app-secret"
	RefreshToken = "test-refresh-token"
)

// File is a stored file.
type File struct {
	PathDisplay string
	ID          string
	Size        int64
	// Data is the content, read from disk by Server.File.
	Data []byte
	disk string
}

// TB is what the server needs of a test.
type TB interface {
	Cleanup(func())
	TempDir() string
}

// Server is the fake Dropbox. Its URL serves both the API and the content
// host.
type Server struct {
	*httptest.Server

	mu        sync.Mutex
	tokens    map[string]time.Time // access token → expiry
	files     map[string]*File     // lower-case path → file
	folders   map[string]string    // lower-case path → display path
	sessions  map[string]*spool
	dir       string
	nextID    int
	quota     int64 // bytes; 0 = unlimited
	readOnly  []string
	faults    []fault
	calls     map[string]int
	refreshes int
	tokenLife time.Duration
}

type fault struct {
	route  string // "" any route
	status int
	header http.Header
	body   string
}

// New starts a server, closed when the test ends. What it stores lives
// in a folder of the test's, not in memory.
func New(t TB) *Server {
	s := &Server{
		tokens: map[string]time.Time{}, files: map[string]*File{}, folders: map[string]string{},
		sessions: map[string]*spool{}, calls: map[string]int{}, tokenLife: 4 * time.Hour, dir: t.TempDir(),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth2/token", s.token)
	mux.HandleFunc("POST /2/files/upload", s.api(s.upload, true))
	mux.HandleFunc("POST /2/files/upload_session/start", s.api(s.sessionStart, true))
	mux.HandleFunc("POST /2/files/upload_session/append_v2", s.api(s.appendV2, true))
	mux.HandleFunc("POST /2/files/upload_session/finish", s.api(s.finish, true))
	mux.HandleFunc("POST /2/files/list_folder", s.api(s.listFolder, false))
	mux.HandleFunc("POST /2/files/delete_v2", s.api(s.deleteV2, false))
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// SetQuota limits the bytes all files may take (0: unlimited).
func (s *Server) SetQuota(bytes int64) { s.mu.Lock(); s.quota = bytes; s.mu.Unlock() }

// ReadOnly makes the folder (and what is inside) refuse writes with
// path/no_write_permission.
func (s *Server) ReadOnly(folder string) {
	s.mu.Lock()
	s.readOnly = append(s.readOnly, strings.ToLower(folder))
	s.mu.Unlock()
}

// ExpireTokens makes every access token issued so far expired: the next
// call with one is answered 401 expired_access_token.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	for k := range s.tokens {
		s.tokens[k] = time.Time{}
	}
	s.mu.Unlock()
}

// SetTokenLife is how long the access tokens issued from now on say they
// live (expires_in); the server honours their expiry either way.
func (s *Server) SetTokenLife(d time.Duration) { s.mu.Lock(); s.tokenLife = d; s.mu.Unlock() }

// Fail answers the next n calls of route ("files/upload", "oauth2/token";
// "" for any) with status, header and body instead of serving them.
func (s *Server) Fail(route string, n, status int, header http.Header, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{route: route, status: status, header: header, body: body})
	}
}

// RateLimit answers the next n calls of route 429 too_many_requests with
// Retry-After: retryAfter seconds, as Dropbox does.
func (s *Server) RateLimit(route string, n, retryAfter int) {
	body := fmt.Sprintf(`{"error_summary": "too_many_requests/..", "error": {"reason": {".tag": "too_many_requests"}, "retry_after": %d}}`, retryAfter)
	s.Fail(route, n, http.StatusTooManyRequests, http.Header{"Retry-After": {fmt.Sprint(retryAfter)}, "Content-Type": {"application/json"}}, body)
}

// File returns the file at p (any case) with its content, or nil.
func (s *Server) File(p string) *File {
	s.mu.Lock()
	f, ok := s.files[strings.ToLower(p)]
	var c File
	if ok {
		c = *f
	}
	s.mu.Unlock()
	if !ok {
		return nil
	}
	c.Data, _ = os.ReadFile(c.disk)
	return &c
}

// Open reads the file at p (any case).
func (s *Server) Open(p string) (io.ReadCloser, error) {
	s.mu.Lock()
	f, ok := s.files[strings.ToLower(p)]
	s.mu.Unlock()
	if !ok {
		return nil, os.ErrNotExist
	}
	return os.Open(f.disk)
}

// Names lists the names of the files directly in folder (any case).
func (s *Server) Names(folder string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	dir := strings.ToLower(strings.TrimSuffix(folder, "/"))
	if dir == "" {
		dir = "/"
	}
	var out []string
	for k, f := range s.files {
		if path.Dir(k) == dir {
			out = append(out, path.Base(f.PathDisplay))
		}
	}
	sort.Strings(out)
	return out
}

// Paths lists the stored files' paths, sorted.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, f := range s.files {
		out = append(out, f.PathDisplay)
	}
	sort.Strings(out)
	return out
}

// Calls is how many times route was called (served or failed).
func (s *Server) Calls(route string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[route] }

// Refreshes is how many access tokens the token endpoint issued.
func (s *Server) Refreshes() int { s.mu.Lock(); defer s.mu.Unlock(); return s.refreshes }

// MkdirAll records a folder (and its parents).
func (s *Server) MkdirAll(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mkdirLocked(p)
}

func (s *Server) mkdirLocked(p string) {
	for p != "/" && p != "" && p != "." {
		s.folders[strings.ToLower(p)] = p
		p = path.Dir(p)
	}
}

// takeFault returns the next fault for route, if any.
func (s *Server) takeFault(route string) *fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[route]++
	for i, f := range s.faults {
		if f.route == "" || f.route == route {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
			return &f
		}
	}
	return nil
}

func (f *fault) write(w http.ResponseWriter) {
	for k, v := range f.header {
		w.Header()[k] = v
	}
	w.WriteHeader(f.status)
	io.WriteString(w, f.body) //nolint:errcheck
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if f := s.takeFault("oauth2/token"); f != nil {
		f.write(w)
		return
	}
	if err := r.ParseForm(); err != nil {
		tokenError(w, "invalid_request", "malformed form")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	switch {
	case r.PostForm.Get("grant_type") != "refresh_token":
		tokenError(w, "unsupported_grant_type", "")
	case id != AppKey || secret != AppSecret:
		tokenError(w, "invalid_client", "Invalid client_id or client_secret")
	case r.PostForm.Get("refresh_token") != RefreshToken:
		tokenError(w, "invalid_grant", "refresh token is malformed")
	default:
		s.mu.Lock()
		s.refreshes++
		tok := fmt.Sprintf("sl.test-%d", s.refreshes)
		s.tokens[tok] = time.Now().Add(s.tokenLife)
		life := s.tokenLife
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": int(life.Seconds())})
	}
}

func tokenError(w http.ResponseWriter, code, desc string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v) //nolint:errcheck
}

// apiErr writes Dropbox's error body: error_summary and error.
func apiErr(w http.ResponseWriter, status int, summary string, e any) {
	writeJSON(w, status, map[string]any{"error_summary": summary, "error": e})
}

// badInput is Dropbox's 400: plain text.
func badInput(w http.ResponseWriter, route, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	fmt.Fprintf(w, "Error in call to API function %q: %s", route, msg)
}

// spool is a request body (or an upload session) kept on disk.
type spool struct {
	path string
	size int64
}

// spoolBody writes r's body (up to max bytes) to a file of the server's.
func (s *Server) spoolBody(r io.Reader, max int64) (*spool, error) {
	f, err := os.CreateTemp(s.dir, "body-*")
	if err != nil {
		return nil, err
	}
	n, err := io.Copy(f, io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, err
	}
	return &spool{path: f.Name(), size: n}, nil
}

// appendTo adds sp's bytes to the file at dst.
func appendTo(dst string, sp *spool) error {
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	in, err := os.Open(sp.path)
	if err == nil {
		_, err = io.Copy(out, in)
		in.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

type handler func(w http.ResponseWriter, r *http.Request, route string, arg json.RawMessage, body *spool)

// api checks the token and reads the argument (the Dropbox-API-Arg header
// on content routes, which must be ASCII, else the JSON body).
func (s *Server) api(h handler, content bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		route := strings.TrimPrefix(r.URL.Path, "/2/")
		if f := s.takeFault(route); f != nil {
			io.Copy(io.Discard, r.Body) //nolint:errcheck
			f.write(w)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		exp, known := s.tokens[tok]
		s.mu.Unlock()
		switch {
		case !ok || !known:
			apiErr(w, http.StatusUnauthorized, "invalid_access_token/...", map[string]string{".tag": "invalid_access_token"})
			return
		case time.Now().After(exp):
			apiErr(w, http.StatusUnauthorized, "expired_access_token/...", map[string]string{".tag": "expired_access_token"})
			return
		}
		var arg []byte
		var body *spool
		if content {
			if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
				badInput(w, route, fmt.Sprintf("Bad HTTP \"Content-Type\" header: %q. Expecting \"application/octet-stream\".", ct))
				return
			}
			h := r.Header.Get("Dropbox-API-Arg")
			for i := 0; i < len(h); i++ {
				if h[i] > 0x7e {
					badInput(w, route, `HTTP header "Dropbox-API-Arg": could not decode input as JSON`)
					return
				}
			}
			arg = []byte(h)
			sp, err := s.spoolBody(r.Body, 150<<20)
			if err != nil {
				return
			}
			defer os.Remove(sp.path)
			if sp.size > 150<<20 {
				badInput(w, route, "request body too large")
				return
			}
			body = sp
		} else {
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				badInput(w, route, fmt.Sprintf("Bad HTTP \"Content-Type\" header: %q.", ct))
				return
			}
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				return
			}
			arg = b
		}
		if !json.Valid(arg) {
			badInput(w, route, "could not decode input as JSON")
			return
		}
		h(w, r, route, arg, body)
	}
}
