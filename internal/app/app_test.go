package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
	"docflow/storage/postgres"
	"docflow/streams"
)

// A serve process built by app.Build runs every part: the eight standard
// steps and (with ENABLE_TEST_STEP) the test step registered once, topics
// of KAFKA_PARTITIONS partitions, every health check, and a document
// uploaded through the API goes through the relay, the router, a step
// and the indexer to the search results.
func TestServeRunsTheWholeFlow(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"ENABLE_TEST_STEP": "true"}})
	for _, typ := range append([]string{docflow.StepTest}, docflow.StandardSteps...) {
		if _, ok := a.Registry.Lookup(typ); !ok {
			t.Fatalf("step %s is not registered", typ)
		}
	}
	if n := len(a.Registry.Types()); n != len(docflow.StandardSteps)+1 {
		t.Fatalf("%d step types registered: %v", n, a.Registry.Types())
	}

	conn, err := kafka.Dial("tcp", a.Brokers[0])
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions(streams.TopicFilesIngested)
	conn.Close()
	if err != nil || len(parts) != 4 {
		t.Fatalf("%s has %d partitions (%v), want KAFKA_PARTITIONS=4", streams.TopicFilesIngested, len(parts), err)
	}

	status, body := get(t, a.URL+"/api/diagnostic/healthz/ready")
	for _, check := range []string{"database", "queue", "search", "analytics"} {
		if status != 200 || !strings.Contains(body, `"`+check+`":{"status":"ok"}`) {
			t.Fatalf("ready: %d %s (want %s ok)", status, body, check)
		}
	}

	ctx := context.Background()
	p := &docflow.Pipeline{Name: "one test step", IsDefault: true, IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepTest, Label: "drill", Enabled: true,
			Config: map[string]any{"title": "The quokka report"}}}}
	if err := postgres.NewPipelineStore(a.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	id := upload(t, a.URL, "flow.txt", "a document\n")
	testsupport.WaitFor(t, 3*time.Minute, "the document completed and indexed", func() bool {
		f, err := a.Files.FindFileByID(ctx, id)
		if err != nil || f.Status != docflow.StatusCompleted {
			return false
		}
		_, body := get(t, a.URL+"/api/search?q=quokka")
		return strings.Contains(body, fmt.Sprintf(`"id":%d`, id)) || strings.Contains(body, fmt.Sprintf(`"file_id":%d`, id))
	})
}

// A worker runs the engine, the relay and intake, and no HTTP API nor
// search index; without ENABLE_TEST_STEP it registers the standard steps
// only.
func TestWorkerRunsTheEngineOnly(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "worker"})
	if a.Engine == nil || a.Relay == nil || a.Intake == nil {
		t.Fatalf("worker lacks a part: engine %v relay %v intake %v", a.Engine != nil, a.Relay != nil, a.Intake != nil)
	}
	if a.HTTP != nil || a.Index != nil || a.URL != "" {
		t.Fatalf("worker serves HTTP (%v) or opened the search index (%v)", a.HTTP != nil, a.Index != nil)
	}
	if _, ok := a.Registry.Lookup(docflow.StepTest); ok {
		t.Fatal("the test step is registered without ENABLE_TEST_STEP")
	}
	if got := a.Registry.Types(); len(got) != len(docflow.StandardSteps) {
		t.Fatalf("registered %v, want the standard steps", got)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// upload posts a file to /api/upload and returns its id.
func upload(t *testing.T, base, name, content string) int64 {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", name)
	io.WriteString(w, content) //nolint:errcheck
	mw.Close()
	resp, err := http.Post(base+"/api/upload", mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		FileID int64 `json:"file_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 201 || json.Unmarshal(b, &out) != nil || out.FileID == 0 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	return out.FileID
}
