package app_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/app"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
)

// A setting changed through the API of one process is acted on by
// another, with no restart and no polling of the table: an api process
// and a worker share one database and one broker; WATCH_FOLDERS set
// through the api makes the worker take a file in from that folder, and
// ALLOW_FILE_DELETE stored by the worker's side makes the api refuse a
// deletion.
func TestSettingChangeReachesEveryProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	api := apptest.New(t, apptest.Options{Role: "api", DB: db, Env: map[string]string{"AUTH_ENABLED": "false"}})
	worker := apptest.New(t, apptest.Options{Role: "worker", DB: db, Env: map[string]string{
		"KAFKA_BROKERS": strings.Join(api.Brokers, ","), "WATCH_FOLDER_INTERVAL": "1"}})
	for _, a := range []*apptest.App{api, worker} {
		select {
		case <-a.Settings.Listening():
		case <-time.After(30 * time.Second):
			t.Fatalf("the %s process does not listen for setting changes", a.Role)
		}
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("taken in because a setting changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	status, _, body := call(t, "POST", api.URL+"/api/settings/WATCH_FOLDERS", map[string]string{"value": dir})
	if status != 200 || !strings.Contains(body, `"source":"db"`) {
		t.Fatalf("set WATCH_FOLDERS: %d %s", status, body)
	}
	var id int64
	testsupport.WaitFor(t, 3*time.Minute, "the worker takes in the file of the folder set through the api", func() bool {
		return db.Pool.QueryRow(ctx, `SELECT id FROM files WHERE original_filename = 'note.txt'`).Scan(&id) == nil
	})

	// The other way: a value stored by the worker's side reaches the api.
	if _, err := worker.Settings.Set(ctx, docflow.AllowFileDelete.Key(), "false"); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the api hears ALLOW_FILE_DELETE", func() bool {
		return !docflow.AllowFileDelete.Get(api.Settings)
	})
	if status, _, body := call(t, "DELETE", fmt.Sprintf("%s/api/files/%d", api.URL, id), nil); status != 403 {
		t.Fatalf("delete with ALLOW_FILE_DELETE false: %d %s", status, body)
	}
	// Reset through the api: the worker hears it too.
	if status, _, body := call(t, "DELETE", api.URL+"/api/settings/ALLOW_FILE_DELETE", nil); status != 200 || !strings.Contains(body, `"source":"default"`) {
		t.Fatalf("reset: %d %s", status, body)
	}
	testsupport.WaitFor(t, 3*time.Minute, "the worker hears the reset", func() bool {
		return docflow.AllowFileDelete.Get(worker.Settings)
	})
}

// DEBUG logs at the debug level, whatever LOG_LEVEL says: from the
// environment when the logger is built, and from the database once it is
// open (a stored value applies from the next start).
func TestDebugSettingSetsTheLogLevel(t *testing.T) {
	t.Parallel()
	env := map[string]string{"LOG_LEVEL": "warn", "DEBUG": "true"}
	if l := app.Logger(func(k string) string { return env[k] }, io.Discard); l.GetLevel() != zerolog.DebugLevel {
		t.Fatalf("DEBUG in the environment: level %v", l.GetLevel())
	}
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if _, err := db.Pool.Exec(ctx, `INSERT INTO settings (key, value) VALUES ('DEBUG', 'true')`); err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(io.Discard).Level(zerolog.InfoLevel)
	a := apptest.New(t, apptest.Options{Role: "api", DB: db, Log: &log})
	if a.Log.GetLevel() != zerolog.DebugLevel {
		t.Fatalf("DEBUG in the database: level %v", a.Log.GetLevel())
	}
}
