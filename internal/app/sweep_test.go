package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/testsupport"
	"docflow/storage/blob"
	"docflow/storage/blob/blobtest"
	"docflow/storage/postgres"
)

// mapSettings answers Get from a map (the rest of the interface is unused).
type mapSettings struct {
	docflow.SettingsStore
	m map[string]string
}

func (s mapSettings) Get(key string) string { return s.m[key] }

// reference records a file whose original is key.
func reference(t *testing.T, db *postgres.DB, key string) {
	t.Helper()
	_, err := db.Pool.Exec(context.Background(), `INSERT INTO files (filehash, original_filename, stored_filename,
		file_size, mime_type, status, original_blob) VALUES ($1, 'f.pdf', $1 || '.pdf', 1, 'application/pdf', 'completed', $1)`, key)
	if err != nil {
		t.Fatal(err)
	}
}

func openSweepDeps(t *testing.T) (*postgres.DB, *postgres.FileStore, *blob.Local) {
	t.Helper()
	db, cleanup, err := postgres.OpenTestDB(context.Background(), "cmd_sweep")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	l, err := blob.Open(t.TempDir(), blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return db, postgres.NewFileStore(db), l
}

// A sweep while another process holds the sweep lock is skipped; once the
// lock is free the sweep runs and logs one line with its counts.
func TestBlobSweepSkipsWhileLocked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, files, blobs := openSweepDeps(t)
	kept := blobtest.PutAged(t, blobs, "referenced", 3*24*time.Hour)
	orphan := blobtest.PutAged(t, blobs, "orphan", 3*24*time.Hour)
	reference(t, db, kept)
	var logs testsupport.LogBuffer
	log := zerolog.New(&logs)
	settings := mapSettings{m: map[string]string{}}

	unlock, ok, err := postgres.NewFileStore(db).TryLockBlobSweep(ctx)
	if err != nil || !ok {
		t.Fatalf("lock: %v %v", ok, err)
	}
	st, ran, err := SweepBlobs(ctx, blobs, files, settings, log)
	if err != nil || ran || st != (blob.SweepStats{}) || !blobtest.Exists(t, blobs, orphan) {
		t.Fatalf("sweep while locked: ran %v %+v %v", ran, st, err)
	}
	if strings.Contains(logs.String(), `"message":"blob sweep"`) {
		t.Fatalf("a skipped sweep logged counts: %s", logs.String())
	}
	unlock()

	st, ran, err = SweepBlobs(ctx, blobs, files, settings, log)
	if err != nil || !ran || st.Removed != 1 || st.Examined != 2 {
		t.Fatalf("sweep: ran %v %+v %v", ran, st, err)
	}
	if blobtest.Exists(t, blobs, orphan) || !blobtest.Exists(t, blobs, kept) {
		t.Fatal("the sweep removed the wrong blob")
	}
	out := logs.String()
	if strings.Count(out, `"message":"blob sweep"`) != 1 || !strings.Contains(out, `"removed":1`) ||
		!strings.Contains(out, `"bytes_freed":6`) || !strings.Contains(out, `"min_age":"24h0m0s"`) {
		t.Fatalf("log: %s", out)
	}
}

func TestBlobSweepMinAge(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		set  map[string]string
		want time.Duration
		warn bool
	}{
		{map[string]string{}, 24 * time.Hour, false},
		{map[string]string{"BLOB_SWEEP_MIN_AGE": "7200"}, 2 * time.Hour, false},
		{map[string]string{"BLOB_SWEEP_MIN_AGE": "60"}, 1200 * time.Second, true},
		{map[string]string{"BLOB_SWEEP_MIN_AGE": "3600", "STEP_TIMEOUT": "3000"}, 6000 * time.Second, true},
		{map[string]string{"BLOB_SWEEP_MIN_AGE": "0", "STEP_TIMEOUT": "0"}, 1200 * time.Second, true},
	} {
		var logs bytes.Buffer
		got := blobSweepMinAge(mapSettings{m: c.set}, zerolog.New(&logs))
		if got != c.want || c.warn != strings.Contains(logs.String(), "twice STEP_TIMEOUT") {
			t.Fatalf("%v: %s, want %s; log %q", c.set, got, c.want, logs.String())
		}
	}
}

// The scheduled sweep runs after its first delay, and stops on Close; an
// interval of 0 starts nothing.
func TestBlobSweepSchedule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, files, blobs := openSweepDeps(t)
	cipher, err := postgres.NewCipher(strings.Repeat("s", 32))
	if err != nil {
		t.Fatal(err)
	}
	newMain := func(env map[string]string) (*App, *testsupport.LogBuffer) {
		settings, err := postgres.NewSettingsStore(ctx, db, cipher, func(k string) string { return env[k] }, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		logs := &testsupport.LogBuffer{}
		return &App{Settings: settings, Blobs: blobs, Files: files, Log: zerolog.New(logs), sweepDelay: 50 * time.Millisecond}, logs
	}

	off, offLogs := newMain(map[string]string{"BLOB_SWEEP_INTERVAL": "0"})
	off.startBlobSweep(ctx)
	if len(off.closers) != 0 || !strings.Contains(offLogs.String(), "blob sweep disabled") {
		t.Fatalf("interval 0: %d closers, log %s", len(off.closers), offLogs.String())
	}

	orphan := blobtest.PutAged(t, blobs, "orphan", time.Hour)
	young := blobtest.PutAged(t, blobs, "young", time.Second)
	m, logs := newMain(map[string]string{"BLOB_SWEEP_INTERVAL": "3600", "BLOB_SWEEP_MIN_AGE": "10", "STEP_TIMEOUT": "30"})
	m.startBlobSweep(ctx)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(logs.String(), `"message":"blob sweep"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no sweep within a minute; log %s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if blobtest.Exists(t, blobs, orphan) || !blobtest.Exists(t, blobs, young) {
		t.Fatalf("after the sweep: orphan kept %v, young removed %v", blobtest.Exists(t, blobs, orphan), !blobtest.Exists(t, blobs, young))
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.Close(cctx); err != nil || cctx.Err() != nil {
		t.Fatalf("close: %v %v", err, cctx.Err())
	}
	if n := strings.Count(logs.String(), `"message":"blob sweep"`); n != 1 {
		t.Fatalf("%d sweeps, want 1 (the next one is an hour away)", n)
	}
}

// Close runs the closers newest first, once.
func TestCloseIsLastInFirstOut(t *testing.T) {
	t.Parallel()
	var order []int
	m := &App{}
	for i := range 3 {
		m.onClose(fmt.Sprint("part ", i), func(context.Context) error { order = append(order, i); return nil })
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.Close(context.Background()) //nolint:errcheck
	if len(order) != 3 || order[0] != 2 || order[1] != 1 || order[2] != 0 {
		t.Fatalf("closers ran in order %v, want [2 1 0]", order)
	}
	var none *App
	if err := none.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The drains close together, before the other parts, which close newest
// first.
func TestDrainsCloseTogetherFirst(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		order []string
	)
	note := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, s)
	}
	m := &App{}
	// Each drain waits until the other has started: closed one after the
	// other, the first would wait for ever.
	engine, http := make(chan struct{}), make(chan struct{})
	drain := func(name string, started, other chan struct{}) func(context.Context) error {
		return func(context.Context) error {
			close(started)
			select {
			case <-other:
			case <-time.After(time.Minute):
				return errors.New("the other drain never started")
			}
			note(name)
			return nil
		}
	}
	m.onClose("database", func(context.Context) error { note("database"); return nil })
	m.onDrain("engine", drain("engine", engine, http))
	m.onClose("index", func(context.Context) error { note("index"); return nil })
	m.onDrain("http", drain("http", http, engine))
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(order) != 4 || order[2] != "index" || order[3] != "database" {
		t.Fatalf("closed in order %v, want the two drains, then index, then database", order)
	}
}

// A part that takes slowClose or longer, or fails, is named in the log at
// info, so a shutdown near its deadline shows what held it; the others
// only at debug.
func TestCloseNamesTheSlowPart(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := &App{Log: zerolog.New(&buf).Level(zerolog.InfoLevel)}
	m.onClose("quick", func(context.Context) error { return nil })
	m.onClose("slow", func(context.Context) error { time.Sleep(slowClose); return nil })
	m.onClose("broken", func(context.Context) error { return errors.New("refused") })
	err := m.Close(context.Background())
	if err == nil || !strings.Contains(err.Error(), "close broken: refused") {
		t.Fatalf("Close = %v, want the broken part's error named", err)
	}
	out := buf.String()
	for _, want := range []string{`"part":"slow"`, `"part":"broken"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"part":"quick"`) {
		t.Errorf("a quick part is logged at info:\n%s", out)
	}
}
