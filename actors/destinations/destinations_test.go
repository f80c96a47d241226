package destinations

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
	"docflow/streams/streamstest"
)

// A document goes to each active destination once, under the name its
// filename_template makes; the file's record, its processing log, the
// storage_provider filter and each integration's status say so. The same
// run queued again sends nothing; a new run overwrites what the first
// delivered.
func TestDeliversToEveryDestinationOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	e.start(nil)
	share := e.davIntegration(d, "Share", "/scans/in", "p", map[string]any{"filename_template": "{date} {title}"})
	folder := e.integration(docflow.IntegrationLocal, "Archive", map[string]any{"path": "archive"}, nil)
	f := e.file("scan.jpg", "Invoice ACME", []byte("%PDF-1.4 first"))
	if q := e.enqueue(f, "run-1"); len(q) != 2 {
		t.Fatalf("queued %+v", q)
	}
	ds := e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	dl := e.waitStatus(f, folder, docflow.DestinationDelivered, time.Minute)
	name := f.CreatedAt.UTC().Format(time.DateOnly) + " Invoice ACME.pdf"
	if ds.RemotePath != "/scans/in/"+name || ds.Attempts != 1 || ds.DeliveredAt == nil || ds.Error != nil || ds.Type != "WEBDAV" {
		t.Fatalf("webdav delivery %+v", ds)
	}
	if dl.RemotePath != "ann/archive/scan.pdf" || dl.Attempts != 1 {
		t.Fatalf("local delivery %+v", dl)
	}
	if b, err := os.ReadFile(filepath.Join(d.dir, "scans", "in", name)); err != nil || string(b) != "%PDF-1.4 first" {
		t.Fatalf("webdav holds %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.localRoot, "ann", "archive", "scan.pdf")); err != nil || string(b) != "%PDF-1.4 first" {
		t.Fatalf("folder holds %q %v", b, err)
	}
	logs := e.logs(f)
	if len(logs) != 2 || !slices.ContainsFunc(logs, func(s string) bool {
		return s == "completed: Delivered to Share (WEBDAV) as /scans/in/"+name
	}) {
		t.Fatalf("logs %q", logs)
	}
	files := postgres.NewFileStore(e.db)
	got, err := files.FindFileByID(e.ctx, f.ID)
	if err != nil || !slices.Equal(got.StorageProviders, []string{"webdav", "local"}) && !slices.Equal(got.StorageProviders, []string{"local", "webdav"}) {
		t.Fatalf("storage providers %v %v", got.StorageProviders, err)
	}
	list, total, err := files.FindFiles(e.ctx, docflow.FileFilter{StorageProviders: []string{"webdav"}, Page: 1, PerPage: 10})
	if err != nil || total != 1 || list[0].ID != f.ID {
		t.Fatalf("storage_provider webdav: %d %v", total, err)
	}
	st, lastErr := e.status(share)
	if st.DeliveriesOK != 1 || st.DeliveriesFailed != 0 || lastErr != nil {
		t.Fatalf("status %+v %v", st, lastErr)
	}
	puts := d.puts.Load()

	// The step retried for the same run queues nothing.
	if q := e.enqueue(f, "run-1"); len(q) != 0 {
		t.Fatalf("queued again %+v", q)
	}
	time.Sleep(500 * time.Millisecond)
	if d.puts.Load() != puts {
		t.Fatal("a retried step delivered again")
	}

	// A new run (reprocessing) delivers the new version over the old.
	if _, err := e.db.Pool.Exec(e.ctx, `UPDATE files SET processed_blob = $2 WHERE id = $1`, f.ID, e.put("%PDF-1.4 second")); err != nil {
		t.Fatal(err)
	}
	e.enqueue(f, "run-2")
	testsupport.WaitFor(t, time.Minute, "second version", func() bool {
		b, _ := os.ReadFile(filepath.Join(d.dir, "scans", "in", name))
		return string(b) == "%PDF-1.4 second"
	})
	e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	if names := d.files(t, "scans/in"); len(names) != 1 {
		t.Fatalf("files on the share %v", names)
	}
}

func (e *env) put(body string) string {
	e.t.Helper()
	info, err := e.blobs.Put(e.ctx, strings.NewReader(body), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return info.Key
}

// A destination down for the first two attempts gets the document on the
// third, once; the other destination got it once, at the first.
func TestDownForTwoAttemptsDeliveredOnTheThird(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	d.setHook(func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if n <= 2 {
			io.Copy(io.Discard, r.Body) //nolint:errcheck
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		}
		return false
	})
	e.start(nil)
	share := e.davIntegration(d, "Share", "/in", "p", nil)
	folder := e.integration(docflow.IntegrationLocal, "Archive", map[string]any{"path": "a"}, nil)
	f := e.file("report.pdf", "", []byte("report"))
	e.enqueue(f, "run-1")
	ds := e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	if ds.Attempts != 3 || d.puts.Load() != 3 {
		t.Fatalf("attempts %d, PUTs %d", ds.Attempts, d.puts.Load())
	}
	if names := d.files(t, "in"); !slices.Equal(names, []string{"report.pdf"}) {
		t.Fatalf("share holds %v", names)
	}
	if dl := e.destinations(f)[folder.ID]; dl.Status != docflow.DestinationDelivered || dl.Attempts != 1 {
		t.Fatalf("the folder's delivery %+v", dl)
	}
	logs := e.logs(f)
	failed := 0
	for _, l := range logs {
		if strings.HasPrefix(l, "failed: Delivery to Share (WEBDAV) failed (attempt ") && strings.Contains(l, "503") {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("logs %q", logs)
	}
	st, lastErr := e.status(share)
	if st.DeliveriesOK != 1 || st.DeliveriesFailed != 2 || lastErr != nil {
		t.Fatalf("status %+v, last error %v", st, lastErr)
	}
}

// Refused credentials: the server's reason in the log and in last_error,
// retried until the last retry, then failed; the other destination is
// unaffected.
func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	e.start(nil)
	share := e.davIntegration(d, "Share", "/in", "wrong", nil)
	folder := e.integration(docflow.IntegrationLocal, "Archive", map[string]any{"path": "a"}, nil)
	f := e.file("report.pdf", "", []byte("report"))
	e.enqueue(f, "run-1")
	e.waitStatus(f, folder, docflow.DestinationDelivered, time.Minute)
	ds := e.waitStatus(f, share, docflow.DestinationFailed, time.Minute)
	if ds.Error == nil || !strings.Contains(*ds.Error, "401") || ds.Attempts != 4 {
		t.Fatalf("delivery %+v (%v)", ds, ds.Error)
	}
	st, lastErr := e.status(share)
	if lastErr == nil || !strings.Contains(*lastErr, "401") || st.DeliveriesFailed < 4 {
		t.Fatalf("status %+v, last error %v", st, lastErr)
	}
	if logs := e.logs(f); !slices.ContainsFunc(logs, func(l string) bool {
		return strings.HasPrefix(l, "failed: Delivery to Share (WEBDAV) failed after 4 attempts:") && strings.Contains(l, "401")
	}) {
		t.Fatalf("logs %q", logs)
	}
}

// A title that would leave the folder is a name inside it.
func TestTemplateCannotEscape(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.start(nil)
	folder := e.integration(docflow.IntegrationLocal, "Archive", map[string]any{"path": "a", "filename_template": "{title}"}, nil)
	f := e.file("x.pdf", "../../../etc/passwd", []byte("x"))
	e.enqueue(f, "run-1")
	dl := e.waitStatus(f, folder, docflow.DestinationDelivered, time.Minute)
	if dl.RemotePath != "ann/a/-.-.-etc-passwd.pdf" {
		t.Fatalf("delivered as %q", dl.RemotePath)
	}
	if _, err := os.Stat(filepath.Join(e.localRoot, "ann", "a", "-.-.-etc-passwd.pdf")); err != nil {
		t.Fatal(err)
	}
}

// stallingPUT makes the first PUT wait before it answers, until
// release is closed or the client goes away; it reports when it started
// and whether the client went away.
type stallingPUT struct {
	started, release chan struct{}
	clientGone       atomic.Bool
}

func newStallingPUT(d *davServer) *stallingPUT {
	s := &stallingPUT{started: make(chan struct{}), release: make(chan struct{})}
	d.setHook(func(n int64, w http.ResponseWriter, r *http.Request) bool {
		if n != 1 {
			return false
		}
		// The whole body read, the server notices a client that goes away.
		io.Copy(io.Discard, r.Body) //nolint:errcheck
		close(s.started)
		select {
		case <-r.Context().Done():
			s.clientGone.Store(true)
		case <-s.release:
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	return s
}

// A destination deactivated, or deleted, while a delivery to it is in
// flight: the upload is cancelled, the delivery recorded as cancelled,
// and nothing is delivered after.
func TestDeactivatedOrDeletedWhileInFlight(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"deactivated", "deleted"} {
		t.Run(how, func(t *testing.T) {
			e := newEnv(t)
			d := newDAV(t)
			stall := newStallingPUT(d)
			defer close(stall.release)
			e.start(nil)
			share := e.davIntegration(d, "Share", "/in", "p", nil)
			f := e.file("report.pdf", "", []byte(strings.Repeat("x", 64<<10)))
			g := e.file("later.pdf", "", []byte("later"))
			e.enqueue(f, "run-1")
			select {
			case <-stall.started:
			case <-time.After(20 * time.Second):
				t.Fatal("the upload did not start")
			}
			// The second document's task waits behind the first.
			e.enqueue(g, "run-1")
			if how == "deactivated" {
				if _, err := e.integ.UpdateIntegration(e.ctx, "ann", share.ID, true, func(in *docflow.Integration) error {
					in.IsActive = false
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			} else if err := e.integ.DeleteIntegration(e.ctx, "ann", share.ID); err != nil {
				t.Fatal(err)
			}
			testsupport.WaitFor(t, time.Minute, "the upload cancelled", stall.clientGone.Load)
			want := "the destination was " + how
			for _, file := range []*docflow.File{f, g} {
				testsupport.WaitFor(t, time.Minute, "cancelled", func() bool {
					ds, err := e.store.FileDestinations(e.ctx, file.ID)
					return err == nil && len(ds) == 1 && ds[0].Status == docflow.DestinationCancelled &&
						ds[0].Error != nil && *ds[0].Error == want
				})
			}
			time.Sleep(300 * time.Millisecond)
			if n := d.puts.Load(); n != 1 {
				t.Fatalf("%d PUTs after the %s destination", n, how)
			}
			if names := d.files(t, "in"); len(names) != 0 {
				t.Fatalf("share holds %v", names)
			}
		})
	}
}

// A worker killed in the middle of an upload acknowledged nothing: the
// next owner of the integration's partition delivers the document, once.
func TestWorkerKilledMidUpload(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	stall := newStallingPUT(d)
	defer close(stall.release)
	_, stopA := e.start(nil)
	share := e.davIntegration(d, "Share", "/in", "p", nil)
	body := strings.Repeat("y", 256<<10)
	f := e.file("big.pdf", "", []byte(body))
	e.enqueue(f, "run-1")
	select {
	case <-stall.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the upload did not start")
	}
	// The worker dies: it leaves without waiting for anything.
	stopA(time.Millisecond)
	testsupport.WaitFor(t, time.Minute, "the upload cut", stall.clientGone.Load)
	e.start(nil)
	ds := e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	if b, err := os.ReadFile(filepath.Join(d.dir, "in", "big.pdf")); err != nil || string(b) != body {
		t.Fatalf("share holds %d bytes, %v", len(b), err)
	}
	if names := d.files(t, "in"); len(names) != 1 {
		t.Fatalf("share holds %v", names)
	}
	if ds.Attempts != 2 || d.puts.Load() != 2 {
		t.Fatalf("attempts %d, PUTs %d", ds.Attempts, d.puts.Load())
	}
	if st, _ := e.status(share); st.DeliveriesOK != 1 {
		t.Fatalf("status %+v", st)
	}
}

// send-to delivers one document again on demand; to an inactive or
// foreign integration it is refused.
func TestSendTo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	e.start(nil)
	share := e.davIntegration(d, "Share", "/in", "p", nil)
	f := e.file("report.pdf", "", []byte("report"))
	if err := e.store.SendFileTo(e.ctx, f.ID, "ann", share.ID); err != nil {
		t.Fatal(err)
	}
	e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	if err := e.store.SendFileTo(e.ctx, f.ID, "ann", share.ID); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, time.Minute, "second PUT", func() bool { return d.puts.Load() == 2 })
	e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	if names := d.files(t, "in"); len(names) != 1 {
		t.Fatalf("share holds %v", names)
	}
	if err := e.store.SendFileTo(e.ctx, f.ID, "bob", share.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("foreign integration: %v", err)
	}
	if err := e.store.SendFileTo(e.ctx, f.ID+100, "ann", share.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := e.integ.UpdateIntegration(e.ctx, "ann", share.ID, true, func(in *docflow.Integration) error {
		in.IsActive = false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.SendFileTo(e.ctx, f.ID, "ann", share.ID); docflow.ErrorCode(err) != docflow.EINVALID {
		t.Fatalf("inactive integration: %v", err)
	}
}

// countingClient counts the deliveries a process made, by integration.
type countingClient struct {
	docflow.DestinationClient
	id   int64
	seen *sync.Map // integration id → *atomic.Int64
}

func (c countingClient) Deliver(ctx context.Context, doc docflow.DestinationDoc, body io.Reader) (string, error) {
	v, _ := c.seen.LoadOrStore(c.id, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	return c.DestinationClient.Deliver(ctx, doc, body)
}

// With two workers, each integration is delivered to by one of them
// only: the one that owns its partition.
func TestOneProcessPerIntegration(t *testing.T) {
	e := newEnv(t)
	d := newDAV(t)
	var seen [2]sync.Map
	for i := range seen {
		e.start(func(c *Config) {
			base := c.Factories[docflow.IntegrationWebDAV]
			c.Factories = docflow.DestinationFactories{docflow.IntegrationWebDAV: func(in *docflow.Integration) (docflow.DestinationClient, error) {
				k, err := base(in)
				return countingClient{DestinationClient: k, id: in.ID, seen: &seen[i]}, err
			}}
		})
	}
	// Both in the group, a partition each, before any work: a rebalance
	// while delivering could hand one integration to both.
	streamstest.WaitGroupShared(t, e.brokers[0], DefaultGroupID, 2, time.Minute)
	var ins []*docflow.Integration
	for i := range 6 {
		ins = append(ins, e.davIntegration(d, fmt.Sprintf("Share %d", i), fmt.Sprintf("/in%d", i), "p", nil))
	}
	var files []*docflow.File
	for i := range 5 {
		f := e.file(fmt.Sprintf("doc-%d.pdf", i), "", []byte(fmt.Sprintf("doc %d", i)))
		e.enqueue(f, "run-1")
		files = append(files, f)
	}
	for _, f := range files {
		for _, in := range ins {
			e.waitStatus(f, in, docflow.DestinationDelivered, time.Minute)
		}
	}
	used := map[int]bool{}
	for _, in := range ins {
		var by []int
		for i := range seen {
			if v, ok := seen[i].Load(in.ID); ok && v.(*atomic.Int64).Load() > 0 {
				by = append(by, i)
				used[i] = true
			}
		}
		if len(by) != 1 {
			t.Fatalf("integration %d delivered to by workers %v", in.ID, by)
		}
	}
	t.Logf("workers used: %v", used)
}
