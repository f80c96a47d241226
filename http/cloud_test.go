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
	"time"

	"docflow"
	"docflow/integrations/dropbox"
	"docflow/integrations/dropbox/dropboxtest"
	"docflow/integrations/googledrive"
	"docflow/integrations/googledrive/drivetest"
	"docflow/integrations/onedrive"
	"docflow/integrations/onedrive/onedrivetest"
	"docflow/internal/netguard"
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

type cloudEnv struct {
	*testEnv
	dropbox  *dropboxtest.Server
	onedrive *onedrivetest.Server
	drive    *drivetest.Server
	queue    *queuedDeliveries
	files    *postgres.FileStore
	ints     *postgres.IntegrationStore
}

func newCloudEnv(t *testing.T) *cloudEnv {
	ce := &cloudEnv{dropbox: dropboxtest.New(t), onedrive: onedrivetest.New(t), drive: drivetest.New(t), queue: &queuedDeliveries{}}
	hc := netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}, Timeout: 10 * time.Second})
	ce.testEnv = newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"}, func(e *testEnv) {
		c, err := postgres.NewCipher(strings.Repeat("s", 40))
		if err != nil {
			t.Fatal(err)
		}
		ce.files, ce.ints = postgres.NewFileStore(e.DB), postgres.NewIntegrationStore(e.DB, c)
		e.Server.MountCloud(CloudDeps{
			Folders: map[string]CloudFolderLister{
				"dropbox": dropbox.Browser{Options: func() dropbox.Options {
					return dropbox.Options{HTTP: hc, APIURL: ce.dropbox.URL, ContentURL: ce.dropbox.URL}
				}},
				"onedrive": onedrive.Browser{Options: func() onedrive.Options {
					return onedrive.Options{HTTP: hc, APIURL: ce.onedrive.APIURL(), LoginURL: ce.onedrive.URL}
				}},
				"google_drive": googledrive.Browser{Options: func() googledrive.Options {
					return googledrive.Options{HTTP: hc, APIURL: ce.drive.URL, TokenURL: ce.drive.TokenURL()}
				}},
			},
			Files: ce.files, Integrations: ce.ints, Deliveries: ce.queue,
		})
	})
	return ce
}

// accessToken signs in to a fake provider and returns its access token.
func accessToken(t *testing.T, c interface{ Connect(context.Context) error }) {
	t.Helper()
	if err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The folder browser takes the spec's form fields and answers each
// provider's shape: has_more for Dropbox and Google Drive, child_count for
// OneDrive.
func TestCloudListFolders(t *testing.T) {
	t.Parallel()
	e := newCloudEnv(t)
	ann := e.token("ann")
	hc := netguard.Client(netguard.ClientOptions{Dialer: netguard.Dialer{AllowPrivate: true}})

	e.dropbox.MkdirAll("/Invoices/2026")
	db, _ := dropbox.New(dropbox.Config{RefreshToken: dropboxtest.RefreshToken, AppKey: dropboxtest.AppKey, AppSecret: dropboxtest.AppSecret},
		dropbox.Options{HTTP: hc, APIURL: e.dropbox.URL, ContentURL: e.dropbox.URL})
	accessToken(t, db)
	form := url.Values{"access_token": {"sl.test-1"}, "path": {"/Invoices"}}.Encode()
	resp, body := e.do("POST", "/api/dropbox/list-folders", ann, strings.NewReader(form), "Content-Type", "application/x-www-form-urlencoded")
	e.expect(resp, body, 200)
	if got := string(body); !strings.Contains(got, `"folders":[{"name":"2026","path":"/Invoices/2026","id":`) ||
		!strings.Contains(got, `"has_more":false`) || !strings.Contains(got, `"path":"/Invoices"`) || strings.Contains(got, "child_count") {
		t.Fatalf("dropbox: %s", body)
	}

	e.onedrive.MkdirAll("/Scans/Old")
	od, _ := onedrive.New(onedrive.Config{RefreshToken: onedrivetest.RefreshToken, ClientID: onedrivetest.ClientID, ClientSecret: onedrivetest.ClientSecret},
		onedrive.Options{HTTP: hc, APIURL: e.onedrive.APIURL(), LoginURL: e.onedrive.URL})
	accessToken(t, od)
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	mw.WriteField("access_token", "eyJ0eXAi.test-1") //nolint:errcheck
	mw.Close()                                       //nolint:errcheck
	resp, body = e.do("POST", "/api/onedrive/list-folders", ann, &mb, "Content-Type", mw.FormDataContentType())
	e.expect(resp, body, 200)
	if got := string(body); !strings.Contains(got, `{"name":"Scans","path":"/Scans","id":"F/scans","child_count":1}`) ||
		strings.Contains(got, "has_more") || !strings.Contains(got, `"path":"/"`) {
		t.Fatalf("onedrive: %s", body)
	}

	folder := e.drive.Mkdir("root", "Receipts")
	gd, _ := googledrive.New(googledrive.Config{RefreshToken: drivetest.RefreshToken, ClientID: drivetest.ClientID, ClientSecret: drivetest.ClientSecret},
		googledrive.Options{HTTP: hc, APIURL: e.drive.URL, TokenURL: e.drive.TokenURL()})
	accessToken(t, gd)
	resp, body = e.do("POST", "/api/google_drive/list-folders", ann, map[string]string{"access_token": "ya29.test-1"})
	e.expect(resp, body, 200)
	if got := string(body); got != fmt.Sprintf(`{"folders":[{"name":"Receipts","path":"%s","id":"%s"}],"has_more":false,"path":"root"}`+"\n", folder, folder) {
		t.Fatalf("google drive: %s", body)
	}

	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"path": "/"})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"access_token": "wrong"})
	e.expect(resp, body, 400)
	if !strings.Contains(string(body), "invalid_access_token") {
		t.Fatalf("refused token: %s", body)
	}
	resp, body = e.do("POST", "/api/onedrive/list-folders", ann, map[string]string{"access_token": "eyJ0eXAi.test-1", "path": "/missing"})
	e.expect(resp, body, 404)
	e.dropbox.RateLimit("files/list_folder", 1, 15)
	resp, body = e.do("POST", "/api/dropbox/list-folders", ann, map[string]string{"access_token": "sl.test-1"})
	e.expect(resp, body, 429)
	if resp.Header.Get("Retry-After") != "15" {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	resp, body = e.do("POST", "/api/dropbox/list-folders", "", map[string]string{"access_token": "sl.test-1"})
	e.expect(resp, body, 401)
}

// The send-to routes queue the document file_path names (its id, its
// stored name, or a path ending in it) for the caller's destination of
// that provider.
func TestCloudSendTo(t *testing.T) {
	t.Parallel()
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
