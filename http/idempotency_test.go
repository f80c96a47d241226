package http

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// uploadWithKey posts a file to /api/upload with an Idempotency-Key.
func (fe *filesEnv) uploadWithKey(key, filename string, content []byte) (*nethttp.Response, []byte) {
	fe.t.Helper()
	ctype, body := multipartBody("file", filename, content)
	return fe.do("POST", "/api/upload", "", body, "Content-Type", ctype, "Idempotency-Key", key)
}

// TestIdempotencyKeyUploadRepeat: the same key twice makes one document
// and the same answer; the same key with another file is 422; a bad key
// is 422 before anything is read.
func TestIdempotencyKeyUploadRepeat(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	resp1, raw1 := fe.uploadWithKey("retry-1", "a.pdf", pdf("idem-a"))
	fe.expect(resp1, raw1, 201)
	resp2, raw2 := fe.uploadWithKey("retry-1", "a.pdf", pdf("idem-a"))
	fe.expect(resp2, raw2, 201)
	if string(raw1) != string(raw2) || resp2.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat answered %s (replayed %q), first %s", raw2, resp2.Header.Get("Idempotent-Replayed"), raw1)
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 1 {
		t.Fatalf("%d files after a repeat, want 1", n)
	}
	resp, raw := fe.uploadWithKey("retry-1", "a.pdf", pdf("idem-other"))
	fe.expect(resp, raw, 422)
	resp, raw = fe.uploadWithKey("retry-1", "renamed.pdf", pdf("idem-a"))
	fe.expect(resp, raw, 422)
	for _, bad := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		resp, raw = fe.uploadWithKey(bad, "b.pdf", pdf("idem-b"))
		fe.expect(resp, raw, 422)
	}
	// Another key is another request.
	resp, raw = fe.uploadWithKey("retry-2", "c.pdf", pdf("idem-c"))
	fe.expect(resp, raw, 201)
	if n := fe.count(`SELECT count(*) FROM files`); n != 2 {
		t.Fatalf("%d files, want 2", n)
	}
}

// TestIdempotencyKeyPerUser: two users' equal keys are two requests.
func TestIdempotencyKeyPerUser(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true"})
	ctype, body := multipartBody("file", "p.pdf", pdf("per-user"))
	for _, owner := range []string{"alice", "bob"} {
		resp, raw := fe.do("POST", "/api/upload", fe.token(owner), body, "Content-Type", ctype, "Idempotency-Key", "same")
		fe.expect(resp, raw, 201)
		if resp.Header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("%s got another user's answer", owner)
		}
	}
}

// TestIdempotencyKeyConcurrentRepeats: repeats racing the first make one
// document; each answers the first's answer or 409 with Retry-After.
func TestIdempotencyKeyConcurrentRepeats(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, raw := fe.uploadWithKey("race", "r.pdf", pdf("race"))
			mu.Lock()
			defer mu.Unlock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == 409 && resp.Header.Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After: %s", raw)
			}
		}()
	}
	wg.Wait()
	if statuses[201] < 1 || statuses[201]+statuses[409] != 8 {
		t.Fatalf("statuses %v", statuses)
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 1 {
		t.Fatalf("%d files after concurrent repeats, want 1", n)
	}
}

// TestIdempotencyKeyProcessURL: process-url repeats answer the first
// answer without fetching again; another URL under the key is 422; a
// failed request frees its key.
func TestIdempotencyKeyProcessURL(t *testing.T) {
	t.Parallel()
	var hits int64
	var mu sync.Mutex
	srv := fetchServer(t, &hits, &mu)
	local := fmt.Sprintf("http://localhost:%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	fe := newFilesEnv(t, map[string]string{"URL_FETCH_ALLOWED_HOSTS": "localhost", "UPLOAD_RATE_LIMIT_PER_USER": "1000"})
	post := func(key, url string) (*nethttp.Response, []byte) {
		return fe.do("POST", "/api/process-url", "", map[string]any{"url": url}, "Idempotency-Key", key)
	}
	resp1, raw1 := post("u1", local+"/doc.pdf")
	fe.expect(resp1, raw1, 200)
	resp2, raw2 := post("u1", local+"/doc.pdf")
	fe.expect(resp2, raw2, 200)
	if string(raw1) != string(raw2) {
		t.Fatalf("repeat %s, first %s", raw2, raw1)
	}
	mu.Lock()
	if hits != 1 {
		t.Fatalf("fetched %d times", hits)
	}
	mu.Unlock()
	resp, raw := post("u1", local+"/noname")
	fe.expect(resp, raw, 422)
	resp, raw = post("u2", local+"/fail")
	fe.expect(resp, raw, 502)
	var n int
	if err := fe.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM idempotency_keys WHERE key = 'u2'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("failed request left its key: %d %v", n, err)
	}
	if n := fe.count(`SELECT count(*) FROM files`); n != 1 {
		t.Fatalf("%d files, want 1", n)
	}
}

// TestIdempotencyKeyHeldWhileRunningFreedWhenAbandoned: a request that
// runs longer than the hold keeps its key (a repeat is 409), and a key
// whose process died mid-request (claimed, never renewed nor completed)
// is free once the hold has passed, not after the route's timeout.
func TestIdempotencyKeyHeldWhileRunningFreedWhenAbandoned(t *testing.T) {
	t.Parallel()
	const hold = 300 * time.Millisecond
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/slow.pdf" {
			started <- struct{}{}
			<-release
		}
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf("held " + r.URL.Path)) //nolint:errcheck
	}))
	defer srv.Close()
	local := fmt.Sprintf("http://localhost:%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	fe := newFilesEnvWith(t, map[string]string{"URL_FETCH_ALLOWED_HOSTS": "localhost", "UPLOAD_RATE_LIMIT_PER_USER": "1000"},
		func(d *UploadDeps) { d.IdempotencyHold = hold })
	post := func(key, url string) (*nethttp.Response, []byte) {
		return fe.do("POST", "/api/process-url", "", map[string]any{"url": url}, "Idempotency-Key", key)
	}

	first := make(chan []byte)
	go func() {
		resp, raw := post("slow", local+"/slow.pdf")
		if resp.StatusCode != 200 {
			t.Errorf("slow request: %d %s", resp.StatusCode, raw)
		}
		first <- raw
	}()
	<-started
	// Several holds later the request still runs, and still holds its key.
	time.Sleep(4 * hold)
	resp, raw := post("slow", local+"/slow.pdf")
	fe.expect(resp, raw, 409)
	close(release)
	raw1 := <-first
	resp, raw = post("slow", local+"/slow.pdf")
	fe.expect(resp, raw, 200)
	if string(raw) != string(raw1) || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat after the first ended: %s (replayed %q), first %s", raw, resp.Header.Get("Idempotent-Replayed"), raw1)
	}

	// A process that claimed a key and died: the key is held for the hold
	// only.
	ctx := context.Background()
	store := postgres.NewIdempotencyStore(fe.DB)
	if _, claimed, err := store.ClaimIdempotencyKey(ctx, "", "orphan", "", hold); err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	resp, raw = post("orphan", local+"/orphan.pdf")
	if resp.StatusCode == 409 {
		testsupport.WaitFor(t, time.Minute, "the abandoned key freed", func() bool {
			resp, raw = post("orphan", local+"/orphan.pdf")
			return resp.StatusCode != 409
		})
	}
	fe.expect(resp, raw, 200)
	if n := fe.count(`SELECT count(*) FROM files`); n != 2 {
		t.Fatalf("%d files, want 2", n)
	}
}

// TestIdempotencyKeysSwept: expired keys are deleted, and an expired key
// is a new request.
func TestIdempotencyKeysSwept(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	resp, raw := fe.uploadWithKey("old", "o.pdf", pdf("old"))
	fe.expect(resp, raw, 201)
	ctx := context.Background()
	if _, err := fe.DB.Pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	resp, raw = fe.uploadWithKey("old", "o2.pdf", pdf("old-2"))
	fe.expect(resp, raw, 201)
	if _, err := fe.DB.Pool.Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	n, err := postgres.NewIdempotencyStore(fe.DB).SweepIdempotencyKeys(ctx)
	if err != nil || n != 1 || fe.count(`SELECT count(*) FROM idempotency_keys`) != 0 {
		t.Fatalf("swept %d %v", n, err)
	}
}

// TestIdempotencyKeyAbandonedAfterItsDocument: a process killed after it
// recorded the document but before it stored its answer leaves the key
// running with the document; once its hold has passed, a repeat answers
// as the first would have, from that document, and creates nothing. A
// document deleted since frees the key for a new request.
func TestIdempotencyKeyAbandonedAfterItsDocument(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Write(pdf("fetched " + r.URL.Path)) //nolint:errcheck
	}))
	defer srv.Close()
	local := fmt.Sprintf("http://localhost:%d", srv.Listener.Addr().(*net.TCPAddr).Port)
	fe := newFilesEnv(t, map[string]string{"URL_FETCH_ALLOWED_HOSTS": "localhost", "UPLOAD_RATE_LIMIT_PER_USER": "1000"})
	ctx := context.Background()
	// killed puts key back as a process killed between the document's
	// commit and its answer left it: running, no answer, lease ended.
	killed := func(key string) {
		t.Helper()
		tag, err := fe.DB.Pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'running', status = 0, content_type = '',
			body = NULL, locked_until = now() - interval '1 second' WHERE key = $1 AND file_id IS NOT NULL`, key)
		if err != nil || tag.RowsAffected() != 1 {
			t.Fatalf("key %s not recorded with its document: %v", key, err)
		}
	}
	files := func() int { return fe.count(`SELECT count(*) FROM files`) }

	resp1, raw1 := fe.uploadWithKey("killed-upload", "k.pdf", pdf("killed"))
	fe.expect(resp1, raw1, 201)
	killed("killed-upload")
	resp, raw := fe.uploadWithKey("killed-upload", "k.pdf", pdf("killed"))
	fe.expect(resp, raw, 201)
	if string(raw) != string(raw1) || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat of the abandoned upload answered %s (replayed %q), first %s", raw, resp.Header.Get("Idempotent-Replayed"), raw1)
	}
	if n := files(); n != 1 {
		t.Fatalf("%d files after the repeat of an abandoned upload, want 1", n)
	}
	if n := fe.count(`SELECT count(*) FROM idempotency_keys WHERE key = 'killed-upload' AND state = 'completed'`); n != 1 {
		t.Fatal("the answer given from the document was not stored")
	}
	// Another file under the abandoned key is still another request.
	killed("killed-upload")
	resp, raw = fe.uploadWithKey("killed-upload", "k.pdf", pdf("other"))
	fe.expect(resp, raw, 422)

	post := func(key, url string) (*nethttp.Response, []byte) {
		return fe.do("POST", "/api/process-url", "", map[string]any{"url": url}, "Idempotency-Key", key)
	}
	resp1, raw1 = post("killed-url", local+"/u.pdf")
	fe.expect(resp1, raw1, 200)
	killed("killed-url")
	resp, raw = post("killed-url", local+"/u.pdf")
	fe.expect(resp, raw, 200)
	if string(raw) != string(raw1) || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat of the abandoned process-url answered %s, first %s", raw, raw1)
	}
	if n := files(); n != 2 {
		t.Fatalf("%d files, want 2", n)
	}

	// The document deleted since: the key is claimed anew.
	killed("killed-url")
	if _, err := fe.DB.Pool.Exec(ctx, `DELETE FROM files WHERE id = (SELECT file_id FROM idempotency_keys WHERE key = 'killed-url')`); err != nil {
		t.Fatal(err)
	}
	resp, raw = post("killed-url", local+"/u.pdf")
	fe.expect(resp, raw, 200)
	if resp.Header.Get("Idempotent-Replayed") != "" || files() != 2 {
		t.Fatalf("repeat after the document was deleted: replayed %q, %d files", resp.Header.Get("Idempotent-Replayed"), files())
	}
}
