package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/intake"
	"docflow/internal/testsupport"
	"docflow/storage/blob"
	"docflow/storage/postgres"
	"docflow/streams"
)

// filesEnv is a test server with intake, the files API and ownership
// mounted on a real PostgreSQL database and a real blob store.
type filesEnv struct {
	*testEnv
	Files  *postgres.FileStore
	Blobs  *blob.Local
	Intake *intake.Service
}

func newFilesEnv(t *testing.T, env map[string]string, opts ...func(*intake.Config)) *filesEnv {
	t.Helper()
	return newFilesEnvWith(t, env, nil, opts...)
}

// newFilesEnvWith is newFilesEnv with the upload routes' dependencies
// changed by uploads (when not nil).
func newFilesEnvWith(t *testing.T, env map[string]string, uploads func(*UploadDeps), opts ...func(*intake.Config)) *filesEnv {
	t.Helper()
	fe := &filesEnv{}
	fe.testEnv = newTestEnv(t, env, func(e *testEnv) {
		var err error
		fe.Blobs, err = blob.Open(t.TempDir(), blob.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		fe.Files = postgres.NewFileStore(e.DB)
		cfg := intake.Config{Files: fe.Files, Blobs: fe.Blobs, Settings: e.Settings, Log: zerolog.Nop(), WorkDir: t.TempDir(),
			LoadPerCPU: func() float64 { return 0 }}
		for _, o := range opts {
			o(&cfg)
		}
		fe.Intake, err = intake.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		deps := UploadDeps{Intake: fe.Intake, Idempotency: postgres.NewIdempotencyStore(e.DB)}
		if uploads != nil {
			uploads(&deps)
		}
		e.Server.MountUploads(deps)
		e.Server.MountFiles(FilesDeps{Files: fe.Files, Blobs: fe.Blobs, Intake: fe.Intake, Pipelines: postgres.NewPipelineStore(e.DB)})
		e.Server.MountOwnership(OwnershipDeps{Files: fe.Files})
	})
	t.Cleanup(fe.Intake.Close)
	return fe
}

// pdf returns a small valid-looking PDF whose bytes differ by tag.
func pdf(tag string) []byte {
	return []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n% " + tag + "\ntrailer << /Root 1 0 R >>\n%%EOF\n")
}

var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00\x90wS\xde")

// multipartBody builds a form with one file field.
func multipartBody(field, filename string, content []byte) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, field, strings.ReplaceAll(filename, `"`, `\"`)))
	h.Set("Content-Type", "application/octet-stream")
	w, _ := mw.CreatePart(h)
	w.Write(content)
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// upload posts a file to path and returns the response and decoded body.
func (fe *filesEnv) upload(path, token, filename string, content []byte) (*nethttp.Response, map[string]any) {
	fe.t.Helper()
	ctype, body := multipartBody("file", filename, content)
	resp, raw := fe.do("POST", path, token, body, "Content-Type", ctype)
	var m map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		m = fe.json(raw)
	}
	if m == nil {
		m = map[string]any{}
	}
	m["_raw"] = string(raw)
	return resp, m
}

func (fe *filesEnv) mustUpload(filename string, content []byte) int64 {
	fe.t.Helper()
	resp, m := fe.upload("/api/upload", "", filename, content)
	if resp.StatusCode != 201 {
		fe.t.Fatalf("upload %s: %d %s", filename, resp.StatusCode, m["_raw"])
	}
	return int64(m["file_id"].(float64))
}

func (fe *filesEnv) count(q string, args ...any) int {
	fe.t.Helper()
	var n int
	if err := fe.DB.Pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		fe.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestUploadRecordsFileRunAndOutboxInOneGo(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	content := pdf("first")
	resp, m := fe.upload("/api/upload", "", "invoice.pdf", content)
	fe.expect(resp, []byte(m["_raw"].(string)), 201)
	if m["status"] != "queued" || m["filename"] != "invoice.pdf" || m["task_id"] == nil || m["message"] == "" {
		t.Fatalf("body %v", m)
	}
	task := m["task_id"].(string)
	id := int64(m["file_id"].(float64))
	ctx := context.Background()
	f, err := fe.Files.FindFileByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	if f.FileHash != hex.EncodeToString(sum[:]) || f.FileSize != int64(len(content)) || f.MimeType != "application/pdf" ||
		f.Status != "pending" || f.TaskID != task || f.OwnerID != nil || f.Source != docflow.ChannelUpload ||
		!strings.HasSuffix(f.StoredFilename, ".pdf") || len(f.StoredFilename) != 40 {
		t.Fatalf("file %+v", f)
	}
	if ok, _ := fe.Blobs.Exists(ctx, f.OriginalBlob); !ok {
		t.Fatal("blob missing")
	}
	var runStatus string
	var runFile int64
	if err := fe.DB.Pool.QueryRow(ctx, `SELECT status, file_id FROM runs WHERE id=$1`, task).Scan(&runStatus, &runFile); err != nil || runStatus != "pending" || runFile != id {
		t.Fatalf("run %s %d %v", runStatus, runFile, err)
	}
	rows, err := fe.DB.Pool.Query(ctx, `SELECT topic, key, payload FROM outbox ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var topics []string
	for rows.Next() {
		var topic, key string
		var payload []byte
		if err := rows.Scan(&topic, &key, &payload); err != nil {
			t.Fatal(err)
		}
		topics = append(topics, topic)
		if key != strconv.FormatInt(id, 10) {
			t.Fatalf("key %q", key)
		}
		switch topic {
		case streams.TopicFilesIngested:
			_, msg, err := streams.Decode[streams.FileIngested](payload)
			if err != nil || msg.FileID != id || msg.RunID != task {
				t.Fatalf("file.ingested %+v %v", msg, err)
			}
		case streams.TopicEvents:
			_, ev, err := streams.Decode[streams.Event](payload)
			if err != nil || ev.Name != docflow.EventDocumentUploaded || ev.Data["filename"] != "invoice.pdf" || !strings.HasPrefix(ev.ID, "evt_") {
				t.Fatalf("event %+v %v", ev, err)
			}
		}
	}
	if strings.Join(topics, ",") != streams.TopicFilesIngested+","+streams.TopicEvents {
		t.Fatalf("outbox topics %v", topics)
	}
}

func TestUploadRouteShapes(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	resp, m := fe.upload("/api/files/upload", "", "a.pdf", pdf("a"))
	if resp.StatusCode != 200 || m["status"] != "queued" || m["filename"] != "a.pdf" {
		t.Fatalf("files/upload %d %v", resp.StatusCode, m)
	}
	for _, p := range []string{"/api/ui-upload", "/api/files/ui-upload"} {
		resp, m = fe.upload(p, "", "b "+p[5:8]+".pdf", pdf(p))
		if resp.StatusCode != 200 || m["status"] != "queued" || m["task_id"] == nil ||
			!strings.HasPrefix(m["original_filename"].(string), "b ") || !strings.HasSuffix(m["stored_filename"].(string), ".pdf") {
			t.Fatalf("%s %d %v", p, resp.StatusCode, m)
		}
	}
	// The automation upload needs a bearer token even in single-user mode.
	resp, m = fe.upload("/api/automation/actions/upload", "", "c.pdf", pdf("c"))
	if resp.StatusCode != 401 {
		t.Fatalf("automation without token %d %v", resp.StatusCode, m)
	}
	resp, m = fe.upload("/api/automation/actions/upload", fe.token("zapier"), "c.pdf", pdf("c"))
	if resp.StatusCode != 200 || m["status"] != "accepted" || m["filename"] != "c.pdf" || m["task_id"] == nil {
		t.Fatalf("automation %d %v", resp.StatusCode, m)
	}
	// Wrong shapes of body.
	resp, body := fe.do("POST", "/api/upload", "", []byte("hello"), "Content-Type", "text/plain")
	fe.expect(resp, body, 422)
	ctype, raw := multipartBody("document", "x.pdf", pdf("x"))
	resp, body = fe.do("POST", "/api/upload", "", raw, "Content-Type", ctype)
	fe.expect(resp, body, 422)
}

func TestUploadFilenamesAreSanitised(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	cases := map[string]string{
		"../../etc/passwd.pdf":            "passwd.pdf",
		`..\..\windows\system32\evil.pdf`: "evil.pdf",
		"/absolute/path/report.pdf":       "report.pdf",
		"C:\\Users\\me\\scan.pdf":         "scan.pdf",
		"....pdf":                         "pdf",
	}
	i := 0
	for in, want := range cases {
		i++
		resp, m := fe.upload("/api/upload", "", in, pdf(strconv.Itoa(i)))
		if want == "pdf" {
			// Nothing but dots: no extension is left, so the type is refused.
			if resp.StatusCode != 400 {
				t.Fatalf("%q: %d %v", in, resp.StatusCode, m)
			}
			continue
		}
		if resp.StatusCode != 201 || m["filename"] != want {
			t.Fatalf("%q: %d %v, want %q", in, resp.StatusCode, m, want)
		}
	}
	var bad int
	fe.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM files WHERE original_filename LIKE '%/%' OR original_filename LIKE '%..%' OR original_filename LIKE '%\%'`).Scan(&bad)
	if bad != 0 {
		t.Fatalf("%d unsafe names stored", bad)
	}
}

func TestUploadRefusesWrongTypesAndEmptyFiles(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	cases := []struct {
		name    string
		content []byte
	}{
		{"photo.pdf", pngHeader},                       // extension lies: PNG content
		{"notes.txt", pdf("pdf as text")},              // PDF named .txt
		{"tool.exe", []byte("MZ\x90\x00\x03\x00\x00")}, // unsupported extension
		{"noext", pdf("noext")},
		{"page.png", []byte("<html><script>alert(1)</script></html>")},
		{"empty.pdf", nil},
	}
	for _, c := range cases {
		resp, m := fe.upload("/api/upload", "", c.name, c.content)
		if resp.StatusCode != 400 {
			t.Fatalf("%s: %d %v", c.name, resp.StatusCode, m)
		}
		if c.content == nil {
			if m["detail"] != "File is empty" {
				t.Fatalf("empty detail %v", m)
			}
		} else if !strings.Contains(m["detail"].(string), ".pdf") || !strings.Contains(m["detail"].(string), ".docx") {
			t.Fatalf("%s: detail does not list supported types: %v", c.name, m["detail"])
		}
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 0 {
		t.Fatalf("%d files recorded", n)
	}
	// Real PNG named .png and text named .txt/.csv pass.
	for name, content := range map[string][]byte{"p.png": pngHeader, "n.txt": []byte("hello\n"), "t.csv": []byte("a,b\n1,2\n")} {
		if resp, m := fe.upload("/api/upload", "", name, content); resp.StatusCode != 201 {
			t.Fatalf("%s: %d %v", name, resp.StatusCode, m)
		}
	}
	if n := fe.Blobs.TempCount(); n != 0 {
		t.Fatalf("%d temp files left", n)
	}
}

// rawRequest writes a request by hand so tests can lie about
// Content-Length or cut the body off; it returns what the server answered
// (empty when the server only closed).
func rawRequest(t *testing.T, base, head string, body []byte, closeWrite bool) string {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Only a bound on a server that never answers: a loaded machine may
	// take seconds.
	conn.SetDeadline(time.Now().Add(time.Minute))
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	conn.Write(body) //nolint:errcheck
	if closeWrite {
		conn.(*net.TCPConn).CloseWrite()
	}
	out, _ := io.ReadAll(bufio.NewReader(conn))
	return string(out)
}

func TestUploadContentLengthOverLimitIs413BeforeReading(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"MAX_UPLOAD_SIZE": "100000"})
	ctype, _ := multipartBody("file", "big.pdf", nil)
	head := "POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + ctype + "\r\nContent-Length: 5000000000\r\n\r\n"
	// Only fasthttp's 8 KiB read-ahead of the declared 5 GB is ever sent,
	// and the write side stays open: a server waiting for the body would
	// never answer (or time out with a 408), so the 413 naming both sizes
	// shows the answer came without it, however long the machine took.
	out := rawRequest(t, fe.URL, head, bytes.Repeat([]byte("x"), 8<<10), false)
	if !strings.HasPrefix(out, "HTTP/1.1 413") || !strings.Contains(out, "5000000000") || !strings.Contains(out, "100000") {
		t.Fatalf("answer %q", out)
	}

	// Without a declared size, the limit is enforced while streaming.
	ctype, body := multipartBody("file", "big.pdf", append(pdf("big"), bytes.Repeat([]byte("x"), 200_000)...))
	req, _ := nethttp.NewRequest("POST", fe.URL+"/api/upload", io.MultiReader(bytes.NewReader(body)))
	req.Header.Set("Content-Type", ctype)
	req.ContentLength = -1 // chunked
	resp, err := fe.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !strings.Contains(string(raw), "100000") {
		t.Fatalf("streamed oversize: %d %s", resp.StatusCode, raw)
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 0 {
		t.Fatalf("%d files recorded", n)
	}
	waitNoTemps(t, fe.Blobs)
}

// waitNoTemps waits until the uploads' temporary files are gone (a
// handler removes its file as it returns, after the client has its answer).
func waitNoTemps(t *testing.T, b *blob.Local) {
	t.Helper()
	testsupport.WaitFor(t, time.Minute, "no temp files left", func() bool { return b.TempCount() == 0 })
}

// waitNoConns waits until the server holds no connection: every handler
// has returned.
func waitNoConns(t *testing.T, s *Server) {
	t.Helper()
	testsupport.WaitFor(t, time.Minute, "every connection closed", func() bool {
		s.life.Lock()
		srv := s.srv
		s.life.Unlock()
		return srv != nil && srv.GetOpenConnectionsCount() == 0
	})
}

func TestUploadCutOffMidBodyLeavesNothing(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	content := append(pdf("cut"), bytes.Repeat([]byte("y"), 300_000)...)
	ctype, body := multipartBody("file", "cut.pdf", content)
	head := "POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: " + ctype + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	// Half the body, then the client hangs up.
	rawRequest(t, fe.URL, head, body[:len(body)/2], true)
	waitNoTemps(t, fe.Blobs)
	// The handler has done whatever it would do once its connection is
	// closed (the only one: nothing else was asked of this server).
	waitNoConns(t, fe.Server)
	if n := fe.count(`SELECT count(*) FROM files`); n != 0 {
		t.Fatalf("%d files recorded", n)
	}
	if n := fe.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Fatalf("%d outbox rows", n)
	}
	sum := sha256.Sum256(content)
	if ok, _ := fe.Blobs.Exists(context.Background(), hex.EncodeToString(sum[:])); ok {
		t.Fatal("partial content stored as a blob")
	}
	// The server still works.
	fe.mustUpload("after.pdf", pdf("after"))
}

func TestIdenticalUploadsAtTheSameInstant(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	for round := 0; round < 5; round++ {
		content := pdf("same-" + strconv.Itoa(round))
		var wg sync.WaitGroup
		start := make(chan struct{})
		statuses := make([]string, 2)
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ctype, body := multipartBody("file", "same.pdf", content)
				req, _ := nethttp.NewRequest("POST", fe.URL+"/api/upload", bytes.NewReader(body))
				req.Header.Set("Content-Type", ctype)
				resp, err := fe.Client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				statuses[i] = strconv.Itoa(resp.StatusCode) + " " + string(raw)
			}()
		}
		close(start)
		wg.Wait()
		sum := sha256.Sum256(content)
		hash := hex.EncodeToString(sum[:])
		orig := fe.count(`SELECT count(*) FROM files WHERE filehash=$1 AND status <> 'duplicate'`, hash)
		dup := fe.count(`SELECT count(*) FROM files WHERE filehash=$1 AND status = 'duplicate' AND duplicate_of IS NOT NULL`, hash)
		if orig != 1 || dup != 1 {
			t.Fatalf("round %d: %d originals, %d duplicates; answers %v", round, orig, dup, statuses)
		}
		if runs := fe.count(`SELECT count(*) FROM runs r JOIN files f ON f.id = r.file_id WHERE f.filehash=$1`, hash); runs != 1 {
			t.Fatalf("round %d: %d runs, want 1 (duplicates are not queued)", round, runs)
		}
	}
}

func TestUIUploadDuplicateIsNotRecorded(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	content := pdf("dup")
	resp, first := fe.upload("/api/ui-upload", "", "orig.pdf", content)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, first)
	}
	resp, m := fe.upload("/api/ui-upload", "", "copy.pdf", content)
	if resp.StatusCode != 200 || m["status"] != "duplicate" || m["original_filename"] != "copy.pdf" || m["task_id"] != nil {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	d := m["duplicate_of"].(map[string]any)
	if d["duplicate_type"] != "exact" || d["original_filename"] != "orig.pdf" || d["original_file_id"] != first["file_id"] || d["message"] == "" {
		t.Fatalf("duplicate_of %v", d)
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 1 {
		t.Fatalf("%d files", n)
	}
	// With deduplication off, the same content is a new file.
	fe.SetEnv("ENABLE_DEDUPLICATION", "false")
	resp, m = fe.upload("/api/ui-upload", "", "again.pdf", content)
	if resp.StatusCode != 200 || m["status"] != "queued" {
		t.Fatalf("dedup off: %d %v", resp.StatusCode, m)
	}
	if n := fe.count(`SELECT count(*) FROM files WHERE status='pending'`); n != 2 {
		t.Fatalf("%d pending files", n)
	}
}

func TestUploadLimitsBlockedWindowDaily(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "RATE_LIMITING_ENABLED": "true", "UPLOAD_RATE_LIMIT_PER_USER": "2", "UPLOAD_RATE_LIMIT_WINDOW": "60"})
	ctx := context.Background()
	alice, bob, carol := fe.token("alice"), fe.token("bob"), fe.token("carol")
	// Blocked users get 403 before the body is read.
	if _, err := fe.DB.Pool.Exec(ctx, `INSERT INTO user_profiles (user_id, is_blocked) VALUES ('bob', TRUE)`); err != nil {
		t.Fatal(err)
	}
	resp, m := fe.upload("/api/upload", bob, "b.pdf", pdf("b"))
	if resp.StatusCode != 403 {
		t.Fatalf("blocked %d %v", resp.StatusCode, m)
	}
	// Sliding window: 2 per 60 s on ui-upload, then 429 with Retry-After = window/2.
	for i := 0; i < 2; i++ {
		if resp, m := fe.upload("/api/ui-upload", alice, "a.pdf", pdf("a"+strconv.Itoa(i))); resp.StatusCode != 200 {
			t.Fatalf("upload %d: %d %v", i, resp.StatusCode, m)
		}
	}
	resp, m = fe.upload("/api/ui-upload", alice, "a.pdf", pdf("a3"))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "30" || !strings.HasPrefix(m["detail"].(string), "Rate limit exceeded: 2 per") {
		t.Fatalf("window %d %v %q", resp.StatusCode, m, resp.Header.Get("Retry-After"))
	}
	// /api/upload is not in the per-user window.
	if resp, m := fe.upload("/api/upload", alice, "a.pdf", pdf("a4")); resp.StatusCode != 201 {
		t.Fatalf("upload outside window %d %v", resp.StatusCode, m)
	}
	// Daily limit from the profile.
	if _, err := fe.DB.Pool.Exec(ctx, `INSERT INTO user_profiles (user_id, daily_upload_limit) VALUES ('carol', 1)`); err != nil {
		t.Fatal(err)
	}
	if resp, m := fe.upload("/api/upload", carol, "c.pdf", pdf("c1")); resp.StatusCode != 201 {
		t.Fatalf("carol first %d %v", resp.StatusCode, m)
	}
	resp, m = fe.upload("/api/upload", carol, "c.pdf", pdf("c2"))
	if resp.StatusCode != 429 || m["detail"] != "Daily upload limit of 1 reached" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("daily %d %v", resp.StatusCode, m)
	}
	if n := fe.count(`SELECT count(*) FROM files WHERE owner_id='carol'`); n != 1 {
		t.Fatalf("carol has %d files", n)
	}
	if n := fe.count(`SELECT count(*) FROM files WHERE owner_id='alice'`); n != 3 {
		t.Fatalf("alice has %d files", n)
	}
}

func TestUploadWindowShrinksUnderLoad(t *testing.T) {
	t.Parallel()
	depth := 150 // above 100: the limit is multiplied by 0.25
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "RATE_LIMITING_ENABLED": "true", "UPLOAD_RATE_LIMIT_PER_USER": "8"}, func(c *intake.Config) {
		c.QueueDepth = func(context.Context) (int, error) { return depth, nil }
	})
	alice := fe.token("alice")
	for i := 0; i < 2; i++ {
		if resp, m := fe.upload("/api/ui-upload", alice, "l.pdf", pdf("l"+strconv.Itoa(i))); resp.StatusCode != 200 {
			t.Fatalf("upload %d: %d %v", i, resp.StatusCode, m)
		}
	}
	resp, m := fe.upload("/api/ui-upload", alice, "l.pdf", pdf("l2"))
	if resp.StatusCode != 429 || !strings.HasPrefix(m["detail"].(string), "Rate limit exceeded: 2 per 60 seconds") {
		t.Fatalf("under load %d %v", resp.StatusCode, m)
	}
}

// fetchServer serves the process-url fixtures.
func fetchServer(t *testing.T, hits *int64, mu *sync.Mutex) *httptest.Server {
	mux := nethttp.NewServeMux()
	count := func() {
		mu.Lock()
		*hits++
		mu.Unlock()
	}
	mux.HandleFunc("/doc.pdf", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf("fetched"))
	})
	mux.HandleFunc("/noname", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf("noname"))
	})
	mux.HandleFunc("/page.html", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><body>hi</body></html>"))
	})
	mux.HandleFunc("/big.pdf", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		w.Write(append(pdf("big"), bytes.Repeat([]byte("z"), 50_000)...))
	})
	mux.HandleFunc("/big-chunked.pdf", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		w.Write(pdf("bigc"))
		w.(nethttp.Flusher).Flush()
		for i := 0; i < 50; i++ {
			w.Write(bytes.Repeat([]byte("z"), 1000))
		}
	})
	mux.HandleFunc("/slow.pdf", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
	})
	mux.HandleFunc("/fail", func(w nethttp.ResponseWriter, r *nethttp.Request) { count(); w.WriteHeader(500) })
	mux.HandleFunc("/redirect", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		nethttp.Redirect(w, r, r.URL.Query().Get("to"), nethttp.StatusFound)
	})
	mux.HandleFunc("/loop", func(w nethttp.ResponseWriter, r *nethttp.Request) {
		count()
		nethttp.Redirect(w, r, "/loop", nethttp.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestProcessURL(t *testing.T) {
	t.Parallel()
	var hits int64
	var mu sync.Mutex
	srv := fetchServer(t, &hits, &mu)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	local := fmt.Sprintf("http://localhost:%d", port)
	fe := newFilesEnv(t, map[string]string{"URL_FETCH_ALLOWED_HOSTS": "localhost", "MAX_UPLOAD_SIZE": "20000", "URL_FETCH_TIMEOUT": "1",
		"UPLOAD_RATE_LIMIT_PER_USER": "1000"})
	post := func(body any) (int, map[string]any) {
		t.Helper()
		resp, raw := fe.do("POST", "/api/process-url", "", body)
		return resp.StatusCode, fe.json(raw)
	}
	status, m := post(map[string]any{"url": local + "/doc.pdf"})
	if status != 200 || m["status"] != "queued" || m["filename"] != "doc.pdf" || m["task_id"] == nil || m["size"].(float64) != float64(len(pdf("fetched"))) {
		t.Fatalf("fetch %d %v", status, m)
	}
	status, m = post(map[string]any{"url": local + "/noname", "filename": "../named.pdf"})
	if status != 200 || m["filename"] != "named.pdf" {
		t.Fatalf("named %d %v", status, m)
	}
	cases := []struct {
		url    string
		status int
		detail string
	}{
		{"ftp://localhost/doc.pdf", 400, `scheme "ftp"`},
		{"file:///etc/passwd", 400, `scheme "file"`},
		{"http://", 400, "no host"},
		{"not a url", 400, "not an absolute"},
		{"javascript:alert(1)", 400, `scheme "javascript"`},
		{"http://exa mple.com/x.pdf", 400, "Invalid URL"},
		{"http://user:pw@localhost/doc.pdf", 400, "credentials"},
		{fmt.Sprintf("http://127.0.0.1:%d/doc.pdf", port), 400, "private or internal"},
		{local + "/redirect?to=" + fmt.Sprintf("http://127.0.0.1:%d/doc.pdf", port), 400, "private or internal"},
		{local + "/redirect?to=http://169.254.169.254/latest/meta-data/", 400, "private or internal"},
		{local + "/redirect?to=" + fmt.Sprintf("http://[::1]:%d/doc.pdf", port), 400, "private or internal"},
		{local + "/redirect?to=" + fmt.Sprintf("http://2130706433:%d/doc.pdf", port), 400, "private or internal"},
		{local + "/redirect?to=" + fmt.Sprintf("http://0x7f.1:%d/doc.pdf", port), 400, "private or internal"},
		{local + "/redirect?to=" + fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/doc.pdf", port), 400, "private or internal"},
		{local + "/redirect?to=http://10.0.0.1/x.pdf", 400, "private or internal"},
		{local + "/redirect?to=file:///etc/passwd", 400, ""},
		{local + "/loop", 400, "redirects"},
		{local + "/missing.pdf", 404, ""},
		{local + "/fail", 502, ""},
		{local + "/page.html", 400, "Supported file types"},
		{local + "/big.pdf", 413, "20000"},
		{local + "/big-chunked.pdf", 413, "20000"},
		{local + "/slow.pdf", 408, ""},
		{"http://localhost:1/doc.pdf", 502, ""},
	}
	for _, c := range cases {
		status, m := post(map[string]any{"url": c.url})
		if status != c.status || !strings.Contains(fmt.Sprint(m["detail"]), c.detail) {
			t.Errorf("%s: %d %v, want %d %q", c.url, status, m, c.status, c.detail)
		}
	}
	// Malformed bodies.
	for _, body := range []any{map[string]any{}, map[string]any{"url": 5}, "[1]"} {
		if status, m := post(body); status != 422 {
			t.Errorf("body %v: %d %v", body, status, m)
		}
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 2 {
		t.Fatalf("%d files recorded, want the 2 good fetches", n)
	}
	waitNoTemps(t, fe.Blobs)
}

// rebindingResolver answers a public address first and the loopback
// address afterwards, like a DNS server with TTL 0 playing rebinding.
type rebindingResolver struct {
	mu    sync.Mutex
	calls int
}

func (r *rebindingResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if host == "mixed.test" {
		return []net.IPAddr{{IP: net.ParseIP("93.184.216.34")}, {IP: net.ParseIP("127.0.0.1")}}, nil
	}
	if r.calls == 1 {
		return []net.IPAddr{{IP: net.ParseIP("192.88.99.200")}}, nil // public (deprecated relay range, unrouted here)
	}
	return []net.IPAddr{{IP: net.ParseIP("127.0.0.1")}}, nil
}

func TestProcessURLDNSRebinding(t *testing.T) {
	t.Parallel()
	var hits int64
	var mu sync.Mutex
	srv := fetchServer(t, &hits, &mu)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	res := &rebindingResolver{}
	fe := newFilesEnv(t, map[string]string{"URL_FETCH_TIMEOUT": "2"}, func(c *intake.Config) { c.Resolver = res })
	resp, raw := fe.do("POST", "/api/process-url", "", map[string]any{"url": fmt.Sprintf("http://rebind.test:%d/doc.pdf", port)})
	if resp.StatusCode == 200 {
		t.Fatalf("rebinding fetch succeeded: %s", raw)
	}
	// A name with any internal answer is refused outright.
	resp, raw = fe.do("POST", "/api/process-url", "", map[string]any{"url": fmt.Sprintf("http://mixed.test:%d/doc.pdf", port)})
	fe.expect(resp, raw, 400)
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Fatalf("the loopback server was reached %d times", hits)
	}
	res.mu.Lock()
	defer res.mu.Unlock()
	if res.calls != 2 {
		t.Fatalf("resolver asked %d times, want once per fetch (2)", res.calls)
	}
}

func TestProcessAll(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"PROCESSALL_THROTTLE_THRESHOLD": "2", "PROCESSALL_THROTTLE_DELAY": "3"})
	dir := t.TempDir()
	fe.SetEnv("PROCESSALL_DIR", dir)
	resp, raw := fe.do("POST", "/api/processall", "", nil)
	fe.expect(resp, raw, 200)
	if m := fe.json(raw); len(m["pdf_files"].([]any)) != 0 || m["throttled"] != false {
		t.Fatalf("empty %v", m)
	}
	for i := 0; i < 3; i++ {
		writeFile(t, dir, "doc"+strconv.Itoa(i)+".pdf", pdf("pa"+strconv.Itoa(i)))
	}
	writeFile(t, dir, "skip.txt", []byte("not a pdf"))
	resp, raw = fe.do("POST", "/api/processall", "", nil)
	fe.expect(resp, raw, 200)
	m := fe.json(raw)
	if len(m["pdf_files"].([]any)) != 3 || len(m["task_ids"].([]any)) != 3 || m["throttled"] != true || m["message"] == "" {
		t.Fatalf("processall %v", m)
	}
	// Task i is held back i × 3 s.
	rows, err := fe.DB.Pool.Query(context.Background(), `SELECT EXTRACT(EPOCH FROM available_at - created_at) FROM outbox WHERE topic=$1 ORDER BY id`, streams.TopicFilesIngested)
	if err != nil {
		t.Fatal(err)
	}
	var delays []float64
	for rows.Next() {
		var d float64
		rows.Scan(&d)
		delays = append(delays, d)
	}
	rows.Close()
	if len(delays) != 3 || delays[0] > 1 || delays[1] < 2 || delays[1] > 4 || delays[2] < 5 || delays[2] > 7 {
		t.Fatalf("delays %v", delays)
	}
	// Ingested files moved away: a second call takes in nothing.
	resp, raw = fe.do("POST", "/api/processall", "", nil)
	if m := fe.json(raw); len(m["pdf_files"].([]any)) != 0 {
		t.Fatalf("second run %v", m)
	}
}

func writeFile(t *testing.T, dir, name string, content []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
}
