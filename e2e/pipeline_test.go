package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/internal/corpus"
)

func testLog(t *testing.T) zerolog.Logger {
	if os.Getenv("E2E_TEST_LOG") != "" {
		return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
	}
	return zerolog.Nop()
}

func requireTools(t *testing.T) {
	t.Helper()
	corpus.RequireTools(t, "soffice", "tesseract", "pdftotext", "pdftoppm", "pdfunite", "pdfinfo", "img2pdf", "rsvg-convert")
}

// legacy converts the generated OOXML documents to DOC, XLS and PPT with
// LibreOffice, one process (and profile) per format, concurrently.
func legacy(t *testing.T, c *corpus.Corpus, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for src, ext := range map[string]string{"document.docx": "doc", "sheet.xlsx": "xls", "slides.pptx": "ppt"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			prof := filepath.Join(dir, "profile-"+ext)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "soffice", "-env:UserInstallation=file://"+prof, "--headless", "--norestore",
				"--convert-to", ext, "--outdir", dir, c.Get(src).Path)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("convert %s to %s: %v: %s", src, ext, err, b)
				return
			}
			p := filepath.Join(dir, strings.TrimSuffix(src, filepath.Ext(src))+"."+ext)
			if _, err := os.Stat(p); err != nil {
				t.Errorf("no %s: %v", p, err)
				return
			}
			mu.Lock()
			out[ext] = p
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// wordRecall is the share of the words of want found in got.
func wordRecall(want, got string) float64 {
	words := strings.Fields(strings.ToLower(want))
	if len(words) == 0 {
		return 1
	}
	have := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(got)) {
		have[strings.Trim(w, ".,;:!?()\"'")] = true
	}
	n := 0
	for _, w := range words {
		if have[strings.Trim(w, ".,;:!?()\"'")] {
			n++
		}
	}
	return float64(n) / float64(len(words))
}

// TestEveryTypeThroughTheStandardPipeline uploads a document of every
// supported type through intake and lets the engine run the standard
// pipeline: each reaches completed with OCR text, metadata, a
// classification, PDF properties and an embedding.
func TestEveryTypeThroughTheStandardPipeline(t *testing.T) {
	t.Parallel()
	requireTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := corpus.Generate(filepath.Join(dir, "corpus"), corpus.Options{Seed: 11, ScanWidthMM: 150, ScanHeightMM: 80, ScanLines: 6})
	if err != nil {
		t.Fatal(err)
	}
	old := legacy(t, c, dir)
	s, err := Start(ctx, Options{Log: testLog(t), Env: map[string]string{
		"TESSERACT_LANGUAGE": "eng", "CONVERT_CONCURRENCY": "2", "LIBREOFFICE_TIMEOUT": "120",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type doc struct {
		typ, path, text string
		scanned         bool
	}
	docs := []doc{
		{"pdf", c.Get("text.pdf").Path, c.Get("text.pdf").Text, false},
		{"doc", old["doc"], c.Get("document.docx").Text, false},
		{"docx", c.Get("document.docx").Path, c.Get("document.docx").Text, false},
		{"xls", old["xls"], c.Get("sheet.xlsx").Text, false},
		{"xlsx", c.Get("sheet.xlsx").Path, c.Get("sheet.xlsx").Text, false},
		{"ppt", old["ppt"], c.Get("slides.pptx").Text, false},
		{"pptx", c.Get("slides.pptx").Path, c.Get("slides.pptx").Text, false},
		{"txt", c.Get("notes.txt").Path, c.Get("notes.txt").Text, false},
		{"csv", c.Get("table.csv").Path, c.Get("table.csv").Text, false},
		{"rtf", c.Get("letter.rtf").Path, c.Get("letter.rtf").Text, false},
		{"jpg", c.Get("photo_rotated.jpg").Path, c.Get("photo_rotated.jpg").Text, true},
		{"png", c.Get("scan_clean.png").Path, c.Get("scan_clean.png").Text, true},
		{"gif", c.Get("photo.gif").Path, c.Get("photo.gif").Text, true},
		{"bmp", c.Get("photo.bmp").Path, c.Get("photo.bmp").Text, true},
		{"tiff", c.Get("scan_multi.tiff").Path, c.Get("scan_multi.tiff").Text, true},
		{"webp", c.Get("photo.webp").Path, c.Get("photo.webp").Text, true},
		{"svg", c.Get("drawing.svg").Path, c.Get("drawing.svg").Text, false},
	}
	ids := make([]int64, len(docs))
	start := time.Now()
	for i, d := range docs {
		if ids[i], _, err = s.Ingest(ctx, d.path, nil); err != nil {
			t.Fatalf("%s: %v", d.typ, err)
		}
	}
	statuses, err := s.WaitTerminal(ctx, ids...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d documents of %d types processed in %s", len(docs), len(docs), time.Since(start).Round(time.Millisecond))

	for i, d := range docs {
		id := ids[i]
		f, err := s.Files.FindFileByID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if statuses[id] != docflow.StatusCompleted {
			logs, _ := s.Logs(ctx, id)
			var b strings.Builder
			for _, l := range logs {
				fmt.Fprintf(&b, "\n  %s %s: %s", l.StepName, l.Status, l.Message)
			}
			t.Errorf("%s: status %s%s", d.typ, statuses[id], b.String())
			continue
		}
		if r := wordRecall(d.text, f.OCRText); f.OCRText == "" || r < 0.6 {
			t.Errorf("%s: OCR text recall %.2f: %q", d.typ, r, f.OCRText)
		}
		if f.OCRQualityScore == nil || (!d.scanned && d.typ != "svg" && *f.OCRQualityScore != 100) {
			t.Errorf("%s: quality score %v", d.typ, f.OCRQualityScore)
		}
		meta := f.AIMetadata
		cl, _ := meta["classification"].(map[string]any)
		if meta["provider"] != "rules" || cl == nil || cl["category"] == nil {
			t.Errorf("%s: metadata %v", d.typ, meta)
		}
		props, _ := meta["pdf_properties"].(map[string]any)
		if props == nil || props["title"] == "" || meta["metadata_sidecar"] == nil {
			t.Errorf("%s: pdf properties %v", d.typ, meta)
		}
		if f.ProcessedBlob == "" {
			t.Errorf("%s: no processed version", d.typ)
		} else if p, err := s.Blobs.Path(ctx, f.ProcessedBlob); err != nil {
			t.Errorf("%s: processed blob: %v", d.typ, err)
		} else if out, err := exec.Command("pdfinfo", p).CombinedOutput(); err != nil || !strings.Contains(string(out), "Title:") {
			t.Errorf("%s: processed PDF has no title: %v %s", d.typ, err, out)
		}
		var dims int
		var model string
		if err := s.DB.Pool.QueryRow(ctx, `SELECT dimensions, model FROM file_embeddings WHERE file_id=$1`, id).Scan(&dims, &model); err != nil || dims != 384 {
			t.Errorf("%s: embedding %d %q %v", d.typ, dims, model, err)
		}
	}
}

// TestEngineFaults: documents that cannot be processed end failed with a
// log that says why, a provider that keeps answering prose fails after its
// retries, and compute-embedding runs the one step through the engine.
func TestEngineFaults(t *testing.T) {
	t.Parallel()
	requireTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := corpus.Generate(filepath.Join(dir, "corpus"), corpus.Options{Seed: 12, ScanWidthMM: 150, ScanHeightMM: 80, ScanLines: 6})
	if err != nil {
		t.Fatal(err)
	}
	var chats sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n, _ := chats.LoadOrStore("n", new(int))
		*(n.(*int))++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"content":"I think this is an invoice, but I am not sure."}}]}`)
	}))
	defer srv.Close()
	s, err := Start(ctx, Options{Log: testLog(t), Env: map[string]string{"TESSERACT_LANGUAGE": "eng"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Hostile PDFs: intake accepts them (they are PDFs), the engine fails
	// them at convert_to_pdf without retrying.
	want := map[string]string{"corrupt.pdf": "corrupt", "encrypted.pdf": "password", "zero_pages.pdf": "no pages"}
	ids := map[int64]string{}
	for name := range want {
		id, _, err := s.Ingest(ctx, c.Get(name).Path, nil)
		if err != nil {
			// Intake may refuse a PDF it cannot sniff; that is a clear
			// refusal too.
			t.Logf("%s refused at intake: %v", name, err)
			continue
		}
		ids[id] = name
	}
	var all []int64
	for id := range ids {
		all = append(all, id)
	}
	statuses, err := s.WaitTerminal(ctx, all...)
	if err != nil {
		t.Fatal(err)
	}
	for id, name := range ids {
		if statuses[id] != docflow.StatusFailed {
			t.Fatalf("%s: %s", name, statuses[id])
		}
		logs, _ := s.Logs(ctx, id)
		found := false
		for _, l := range logs {
			if l.StepName == docflow.StepConvertToPDF && l.Status == docflow.StepFailed && strings.Contains(strings.ToLower(l.Message), want[name]) {
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: no convert_to_pdf failure naming %q in %v", name, want[name], logText(logs))
		}
		run, err := s.Runs.FindRun(ctx, firstTask(logs))
		if err == nil {
			for _, st := range run.Steps {
				if st.StepType == docflow.StepConvertToPDF && st.Attempts != 1 {
					t.Fatalf("%s: a document problem was retried (%d attempts)", name, st.Attempts)
				}
			}
		}
	}

	// A chat endpoint that answers prose: extract_metadata fails after
	// the engine's retries.
	s.SetEnv("METADATA_PROVIDER", "openai")
	s.SetEnv("OPENAI_BASE_URL", srv.URL+"/v1")
	s.SetEnv("OPENAI_MODEL", "prose")
	id, _, err := s.Ingest(ctx, c.Get("invoice.pdf").Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	statuses, err = s.WaitTerminal(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := s.Logs(ctx, id)
	if statuses[id] != docflow.StatusFailed || !strings.Contains(logText(logs), "JSON") {
		t.Fatalf("prose: %s %s", statuses[id], logText(logs))
	}
	run, err := s.Runs.FindRun(ctx, firstTask(logs))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range run.Steps {
		if st.StepType == docflow.StepExtractMetadata && st.Attempts != 3 {
			t.Fatalf("extract_metadata attempts %d, want 3 (first + 2 retries)", st.Attempts)
		}
	}

	// compute-embedding: the file (its OCR text is stored) gets a run of
	// the one step, which completes with an embedding.
	s.SetEnv("METADATA_PROVIDER", "rules")
	if _, err := s.DB.Pool.Exec(ctx, `DELETE FROM file_embeddings WHERE file_id=$1`, id); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Embeds.QueueEmbeddings(ctx, []int64{id})
	if err != nil || runs[id] == "" {
		t.Fatalf("queue embedding: %v %v", runs, err)
	}
	statuses, err = s.WaitTerminal(ctx, id)
	if err != nil || statuses[id] != docflow.StatusCompleted {
		logs, _ := s.Logs(ctx, id)
		t.Fatalf("embedding run: %v %v %s", statuses, err, logText(logs))
	}
	run, err = s.Runs.FindRun(ctx, runs[id])
	if err != nil || len(run.Steps) != 1 || run.Steps[0].StepType != docflow.StepComputeEmbedding || run.Status != docflow.RunCompleted {
		t.Fatalf("embedding run %+v %v", run, err)
	}
	var dims int
	if err := s.DB.Pool.QueryRow(ctx, `SELECT dimensions FROM file_embeddings WHERE file_id=$1`, id).Scan(&dims); err != nil || dims != 384 {
		t.Fatalf("embedding after the run: %d %v", dims, err)
	}
}

func logText(logs []*docflow.ProcessingLog) string {
	var b strings.Builder
	for _, l := range logs {
		fmt.Fprintf(&b, "\n  %s %s: %s", l.StepName, l.Status, l.Message)
	}
	return b.String()
}

func firstTask(logs []*docflow.ProcessingLog) string {
	for _, l := range logs {
		if l.TaskID != "" {
			return l.TaskID
		}
	}
	return ""
}
