package http

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/url"
	"strings"
	"sync"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

// queuedDeliveries records what the send-to routes queue.
type queuedDeliveries struct {
	mu  sync.Mutex
	got [][2]int64
}

func (q *queuedDeliveries) SendFileTo(_ context.Context, fileID int64, owner string, integrationID int64) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if owner != "ann" {
		return docflow.Errorf(docflow.ENOTFOUND, "not %s's", owner)
	}
	q.got = append(q.got, [2]int64{fileID, integrationID})
	return nil
}

// folderLister answers the folder browser with fixed folders, or the
// error err, and remembers what it was asked.
type folderLister struct {
	mu          sync.Mutex
	token, path string
	page        docflow.CloudFolderPage
	err         error
}

func (l *folderLister) ListFolders(_ context.Context, token, path string) (docflow.CloudFolderPage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.token, l.path = token, path
	return l.page, l.err
}

type cloudEnv struct {
	*testEnv
	dropbox, onedrive, drive *folderLister
	queue                    *queuedDeliveries
	files                    *postgres.FileStore
	ints                     *postgres.IntegrationStore
}

func newCloudEnv(t *testing.T) *cloudEnv {
	ce := &cloudEnv{queue: &queuedDeliveries{},
		dropbox: &folderLister{page: docflow.CloudFolderPage{Path: "/Invoices", Folders: []docflow.CloudFolder{
			{Name: "2026", Path: "/Invoices/2026", ID: "id:a", ChildCount: -1}}}},
		onedrive: &folderLister{page: docflow.CloudFolderPage{Path: "/", Folders: []docflow.CloudFolder{
			{Name: "Scans", Path: "/Scans", ID: "F1", ChildCount: 1}}}},
		drive: &folderLister{page: docflow.CloudFolderPage{Path: "root", HasMore: true, Folders: []docflow.CloudFolder{
			{Name: "Receipts", Path: "folder7", ID: "folder7", ChildCount: -1}}}},
	}
	ce.testEnv = newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"}, func(e *testEnv) {
		c, err := postgres.NewCipher(strings.Repeat("s", 40))
		if err != nil {
			t.Fatal(err)
		}
		ce.files, ce.ints = postgres.NewFileStore(e.DB), postgres.NewIntegrationStore(e.DB, c)
		e.Server.MountCloud(CloudDeps{
			Folders: map[string]CloudFolderLister{"dropbox": ce.dropbox, "onedrive": ce.onedrive, "google_drive": ce.drive},
			Files:   ce.files, Integrations: ce.ints, Deliveries: ce.queue,
		})
	})
	return ce
}

// The folder browser takes the spec's fields as a form (urlencoded or
// multipart) or JSON and answers each provider's shape: has_more for
// Dropbox and Google Drive, child_count for OneDrive; the provider's
// refusals keep their status.
func TestCloudListFolders(t *testing.T) {
	e := newCloudEnv(t)
	ann := e.token("ann")

	form := url.Values{"access_token": {"sl.token"}, "path": {"/Invoices"}}.Encode()
	resp, body := e.do("POST", "/api/dropbox/list-folders", ann, strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 200)
	if got := string(body); got != `{"folders":[{"name":"2026","path":"/Invoices/2026","id":"id:a"}],"has_more":false,"path":"/Invoices"}`+"\n" {
		t.Fatalf("dropbox: %s", body)
	}
	if e.dropbox.token != "sl.token" || e.dropbox.path != "/Invoices" {
		t.Fatalf("asked %q %q", e.dropbox.token, e.dropbox.path)
	}

	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	mw.WriteField("access_token", "eyJ0eXAi") //nolint:errcheck
	mw.Close()                                //nolint:errcheck
	resp, body = e.do("POST", "/api/onedrive/list-folders", ann, &mb, "Content-Type", mw.FormDataContentType())
	e.expect(resp, body, 200)
	if got := string(body); got != `{"folders":[{"name":"Scans","path":"/Scans","id":"F1","child_count":1}],"path":"/"}`+"\n" {
		t.Fatalf("onedrive: %s", body)
	}
	if e.onedrive.token != "eyJ0eXAi" || e.onedrive.path != "" {
		t.Fatalf("asked %q %q", e.onedrive.token, e.onedrive.path)
	}

	resp, body = e.do("POST", "/api/google_drive/list-folders", ann, map[string]string{"access_token": "ya29.x"})
	e.expect(resp, body, 200)
	if got := string(body); got != `{"folders":[{"name":"Receipts","path":"folder7","id":"folder7"}],"has_more":true,"path":"root"}`+"\n" {
		t.Fatalf("google drive: %s", body)
	}

	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"path": "/"})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]any{"access_token": 7})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"access_token": strings.Repeat("x", 9<<10)})
	e.expect(resp, body, 422)

	e.dropbox.err = docflow.Errorf(docflow.EBADREQUEST, "Dropbox answered HTTP 401 (invalid_access_token)")
	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"access_token": "wrong"})
	e.expect(resp, body, 400)
	if !strings.Contains(string(body), "invalid_access_token") {
		t.Fatalf("refused token: %s", body)
	}
	limited := docflow.Errorf(docflow.ERATELIMIT, "Dropbox answered HTTP 429 (too_many_requests)")
	limited.RetryAfter = 15
	e.dropbox.err = limited
	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"access_token": "t"})
	e.expect(resp, body, 429)
	if resp.Header.Get("Retry-After") != "15" {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	resp, body = e.do("POST", "/api/dropbox/list-folders", "", map[string]string{"access_token": "t"})
	e.expect(resp, body, 401)
}

// The send-to routes queue the document file_path names (its id, its
// stored name, or a path ending in it) for the caller's destination of
// that provider.
func TestCloudSendTo(t *testing.T) {
	e := newCloudEnv(t)
	ann, bob := e.token("ann"), e.token("bob")
	ctx := context.Background()
	ingest := func(hash, owner string) *docflow.File {
		f := &docflow.File{FileHash: hash, OriginalFilename: "a.pdf", StoredFilename: hash + ".pdf", FileSize: 1,
			MimeType: "application/pdf", Source: docflow.ChannelUpload, OriginalBlob: hash, OwnerID: &owner}
		if _, err := e.files.Ingest(ctx, docflow.IngestRecord{File: f}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	mine, theirs := ingest("aaa", "ann"), ingest("bbb", "bob")

	resp, body := e.do("POST", "/send_to_dropbox/?file_path="+url.QueryEscape(fmt.Sprint(mine.ID)), ann, nil)
	e.expect(resp, body, 400)
	if !strings.Contains(string(body), "No active DROPBOX destination") {
		t.Fatalf("no destination: %s", body)
	}
	add := func(owner, typ string, active bool) int64 {
		in := &docflow.Integration{OwnerID: owner, Direction: docflow.DirectionDestination, IntegrationType: typ, Name: typ,
			Config: map[string]any{}, Credentials: map[string]string{"refresh_token": "r"}, IsActive: active}
		if err := e.ints.CreateIntegration(ctx, in, true); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	add("ann", docflow.IntegrationDropbox, false)
	first := add("ann", docflow.IntegrationDropbox, true)
	add("ann", docflow.IntegrationDropbox, true)
	od := add("ann", docflow.IntegrationOneDrive, true)

	for _, fp := range []string{fmt.Sprint(mine.ID), "aaa.pdf", "/srv/docflow/processed/aaa.pdf"} {
		resp, body = e.do("POST", "/send_to_dropbox/", ann, map[string]string{"file_path": fp})
		e.expect(resp, body, 200)
		got := e.json(body)
		if got["status"] != "queued" || got["task_id"] != fmt.Sprintf("send:%d:%d", mine.ID, first) {
			t.Fatalf("%q: %s", fp, body)
		}
	}
	form := url.Values{"file_path": {"aaa.pdf"}, "integration_id": {fmt.Sprint(od)}}.Encode()
	resp, body = e.do("POST", "/send_to_onedrive/", ann, strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 200)
	resp, body = e.do("POST", "/send_to_dropbox/", ann, map[string]string{"file_path": "aaa.pdf", "integration_id": fmt.Sprint(od)})
	e.expect(resp, body, 400)

	resp, body = e.do("POST", "/send_to_dropbox/", ann, map[string]string{"file_path": "bbb.pdf"})
	e.expect(resp, body, 403)
	resp, body = e.do("POST", "/send_to_dropbox/", ann, map[string]string{"file_path": "nothing.pdf"})
	e.expect(resp, body, 404)
	resp, body = e.do("POST", "/send_to_dropbox/", ann, map[string]string{})
	e.expect(resp, body, 422)
	// Bob has no Dropbox destination of his own: Ann's are not his.
	resp, body = e.do("POST", "/send_to_dropbox/", bob, map[string]string{"file_path": fmt.Sprint(theirs.ID)})
	e.expect(resp, body, 400)

	e.queue.mu.Lock()
	defer e.queue.mu.Unlock()
	if len(e.queue.got) != 4 || e.queue.got[3] != [2]int64{mine.ID, od} {
		t.Fatalf("queued %v", e.queue.got)
	}
}
