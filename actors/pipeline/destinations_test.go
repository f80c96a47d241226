package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/actors/pipeline/steps"
	"docflow/actors/pipeline/steps/teststep"
	"docflow/storage/postgres"
)

// folderAs is a folder destination of another kind, standing in for an
// integration (a WebDAV share mounted here, say).
type folderAs struct {
	steps.LocalFolder
	provider string
}

func (f folderAs) Name() string     { return "7" } // an integration id
func (f folderAs) Provider() string { return f.provider }

// A document delivered by send_to_destinations records the kinds of
// destination it went to, and the storage_provider filter finds it by any
// of them; one not delivered has none.
func TestDeliveredDocumentsRecordTheirProviders(t *testing.T) {
	t.Parallel()
	local, share := t.TempDir(), t.TempDir()
	var off atomic.Bool
	dests := func(ctx context.Context, f *docflow.File) ([]steps.Destination, error) {
		if off.Load() {
			return nil, nil
		}
		return []steps.Destination{
			steps.LocalFolder{Dir: func() string { return local }},
			folderAs{steps.LocalFolder{Dir: func() string { return share }}, "webdav"},
		}, nil
	}
	e := newEnv(t, func(c *Config) {
		c.Registry = NewRegistry(teststep.New(), steps.SendToDestinations(dests))
	})
	p := e.pipeline("deliver", map[string]any{"type": docflow.StepSendToDestinations})
	id, run := e.ingest("report.pdf", "report bytes", &p.ID, nil)
	if s := e.waitTerminal(time.Minute, id)[id]; s != docflow.StatusCompleted {
		t.Fatalf("status %s logs %+v", s, e.logs(id))
	}
	files := postgres.NewFileStore(e.DB)
	f, err := files.FindFileByID(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.StorageProviders, []string{"local", "webdav"}) {
		t.Fatalf("storage providers %v, want [local webdav]", f.StorageProviders)
	}
	var n int
	if err := e.DB.Pool.QueryRow(e.ctx, `SELECT count(*) FROM deliveries WHERE run_id=$1 AND status='delivered'`, run).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d deliveries %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(share, "shared", strconv.FormatInt(id, 10)+"_report.pdf")); err != nil {
		t.Fatal(err)
	}

	off.Store(true)
	kept, _ := e.ingest("kept.pdf", "kept bytes", &p.ID, nil)
	e.waitTerminal(time.Minute, kept)

	for _, c := range []struct {
		providers []string
		want      []int64
	}{
		{[]string{"webdav"}, []int64{id}},
		{[]string{"local"}, []int64{id}},
		{[]string{"s3"}, nil},
		{[]string{"s3", "webdav"}, []int64{id}},
	} {
		got, total, err := files.FindFiles(e.ctx, docflow.FileFilter{StorageProviders: c.providers, Page: 1, PerPage: 25})
		var ids []int64
		for _, f := range got {
			ids = append(ids, f.ID)
		}
		if err != nil || total != len(c.want) || !slices.Equal(ids, c.want) {
			t.Errorf("storage_provider %v: %v (total %d), want %v: %v", c.providers, ids, total, c.want, err)
		}
	}
}
