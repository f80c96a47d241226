// Package onedrivetest is an in-process OneDrive for tests: the Microsoft
// identity platform's token endpoint (refresh_token grant, optionally
// rotating refresh tokens) and the Graph drive calls the OneDrive client
// makes — simple upload by path, createUploadSession with ranged PUTs to
// the session URL (which refuses an Authorization header, as Graph's
// reference warns), deletion, children of a folder — answering with the
// statuses and error bodies of Graph's reference (401
// InvalidAuthenticationToken, 403 accessDenied, 507 quotaLimitReached,
// 429 activityLimitReached with Retry-After), with faults a test can
// switch on. Files live in memory.
package onedrivetest

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
	ClientID     = "test-client-id"
	ClientSecret = "test-client-secret"
	RefreshToken = "test-refresh-token"
)

// File is a stored file.
type File struct {
	Path string
	ID   string
	Size int64
	// Data is the content, read from disk by Server.File.
	Data []byte
	disk string
}

// TB is what the server needs of a test.
type TB interface {
	Cleanup(func())
	TempDir() string
}

// session is an upload session: the item's path and the bytes received,
// kept on disk.
type session struct {
	path string
	disk string
	size int64
}

// Server is the fake identity platform and Graph API: the API is at
// URL+"/v1.0", the identity platform at URL.
type Server struct {
	*httptest.Server

	mu            sync.Mutex
	tokens        map[string]time.Time
	refreshTokens map[string]bool
	rotate        bool
	files         map[string]*File // lower-case path → file
	folders       map[string]string
	sessions      map[string]*session
	recycled      []string
	nextID        int
	quota         int64
	readOnly      []string
	faults        []fault
	calls         map[string]int
	refreshes     int
	tenants       []string
	dir           string
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
	s := &Server{tokens: map[string]time.Time{}, refreshTokens: map[string]bool{RefreshToken: true},
		files: map[string]*File{}, folders: map[string]string{}, sessions: map[string]*session{}, calls: map[string]int{},
		dir: t.TempDir()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{tenant}/oauth2/v2.0/token", s.token)
	mux.HandleFunc("/v1.0/me/drive/", s.graph)
	mux.HandleFunc("/upload/{id}", s.upload)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// APIURL is the Graph base URL to configure.
func (s *Server) APIURL() string { return s.URL + "/v1.0" }

// RotateRefreshTokens makes every refresh issue a new refresh token (the
// old ones stay valid), as Microsoft does.
func (s *Server) RotateRefreshTokens() { s.mu.Lock(); s.rotate = true; s.mu.Unlock() }

// SetQuota limits the bytes all files may take (0: unlimited).
func (s *Server) SetQuota(bytes int64) { s.mu.Lock(); s.quota = bytes; s.mu.Unlock() }

// ReadOnly makes a folder refuse writes with 403 accessDenied.
func (s *Server) ReadOnly(folder string) {
	s.mu.Lock()
	s.readOnly = append(s.readOnly, strings.ToLower(folder))
	s.mu.Unlock()
}

// ExpireTokens expires every access token issued so far.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	for k := range s.tokens {
		s.tokens[k] = time.Time{}
	}
	s.mu.Unlock()
}

// Fail answers the next n calls named call ("content", "createUploadSession",
// "children", "delete", "fragment", "token"; "" any) with status, header
// and body.
func (s *Server) Fail(call string, n, status int, header http.Header, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults = append(s.faults, fault{call: call, status: status, header: header, body: body})
	}
}

// RateLimit answers the next n calls named call 429 activityLimitReached
// with Retry-After.
func (s *Server) RateLimit(call string, n, retryAfter int) {
	s.Fail(call, n, http.StatusTooManyRequests, http.Header{"Retry-After": {fmt.Sprint(retryAfter)}, "Content-Type": {"application/json"}},
		`{"error": {"code": "activityLimitReached", "message": "The request has been throttled"}}`)
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
			out = append(out, path.Base(f.Path))
		}
	}
	sort.Strings(out)
	return out
}

// spool writes r (up to max bytes) to a new file of the server's and
// returns its path and size.
func (s *Server) spool(r io.Reader, max int64) (string, int64, error) {
	f, err := os.CreateTemp(s.dir, "body-*")
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(f, io.LimitReader(r, max+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", 0, err
	}
	return f.Name(), n, nil
}

// Paths lists the stored files' paths, sorted.
func (s *Server) Paths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, f := range s.files {
		out = append(out, f.Path)
	}
	sort.Strings(out)
	return out
}

// Recycled lists the paths of deleted files (the recycle bin).
func (s *Server) Recycled() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.recycled...)
}

// Calls is how many times call was made.
func (s *Server) Calls(call string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[call] }

// Refreshes is how many access tokens were issued.
func (s *Server) Refreshes() int { s.mu.Lock(); defer s.mu.Unlock(); return s.refreshes }

// Tenants lists the tenants tokens were asked of, in order.
func (s *Server) Tenants() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.tenants...)
}

// MkdirAll records a folder and its parents.
func (s *Server) MkdirAll(p string) { s.mu.Lock(); s.mkdirLocked(p); s.mu.Unlock() }

func (s *Server) mkdirLocked(p string) {
	for p != "/" && p != "" && p != "." {
		s.folders[strings.ToLower(p)] = p
		p = path.Dir(p)
	}
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

func (f *fault) write(w http.ResponseWriter) {
	for k, v := range f.header {
		w.Header()[k] = v
	}
	w.WriteHeader(f.status)
	io.WriteString(w, f.body) //nolint:errcheck
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if v != nil {
		json.NewEncoder(w).Encode(v) //nolint:errcheck
	}
}

// graphErr writes Graph's error body.
func graphErr(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg,
		"innerError": map[string]string{"date": time.Now().UTC().Format(time.RFC3339), "request-id": "00000000-0000-0000-0000-000000000000"}}})
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.tenants = append(s.tenants, r.PathValue("tenant"))
	s.mu.Unlock()
	if f := s.takeFault("token"); f != nil {
		f.write(w)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.PostForm.Get("grant_type") != "refresh_token":
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
	case r.PostForm.Get("client_id") != ClientID || r.PostForm.Get("client_secret") != ClientSecret:
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "invalid_client",
			"error_description": "AADSTS7000215: Invalid client secret provided.", "error_codes": []int{7000215}})
	case !s.refreshTokens[r.PostForm.Get("refresh_token")]:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant",
			"error_description": "AADSTS70000: Provided grant is invalid or malformed.", "error_codes": []int{70000}})
	default:
		s.refreshes++
		tok := fmt.Sprintf("eyJ0eXAi.test-%d", s.refreshes)
		s.tokens[tok] = time.Now().Add(time.Hour)
		rt := r.PostForm.Get("refresh_token")
		if s.rotate {
			rt = fmt.Sprintf("rotated-refresh-%d", s.refreshes)
			s.refreshTokens[rt] = true
		}
		writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "scope": "Files.ReadWrite offline_access",
			"expires_in": 3600, "ext_expires_in": 3600, "access_token": tok, "refresh_token": rt})
	}
}

// authorized checks the bearer token as Graph does.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	exp, known := s.tokens[tok]
	s.mu.Unlock()
	switch {
	case !ok || !known:
		w.Header().Set("WWW-Authenticate", `Bearer realm="", error="invalid_token"`)
		graphErr(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "IDX14100: JWT is not well formed.")
		return false
	case time.Now().After(exp):
		w.Header().Set("WWW-Authenticate", `Bearer realm="", error="invalid_token"`)
		graphErr(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "Lifetime validation failed, the token is expired.")
		return false
	}
	return true
}
