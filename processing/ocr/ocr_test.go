package ocr

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
	"docflow/internal/corpus"
	"docflow/processing/convert"
)

// sharedCorpus is the test corpus of this binary, with small scanned pages
// so that OCR stays quick.
func sharedCorpus(t *testing.T) *corpus.Corpus {
	return corpus.Shared(t, corpus.Options{Seed: 5, ScanWidthMM: 148, ScanHeightMM: 105, ScanLines: 8})
}

func TestMain(m *testing.M) { os.Exit(corpus.RunTests(m)) }

// toPDF converts a corpus image to PDF the way the convert step does.
func toPDF(t *testing.T, s *corpus.Sample) string {
	t.Helper()
	c, err := convert.New(convert.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(s.Name, filepath.Ext(s.Name))+".pdf")
	if err := c.Convert(context.Background(), s.Path, s.MimeType, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func pdfText(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.Command("pdftotext", path, "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestBornDigital(t *testing.T) {
	corpus.RequireTools(t, "pdftotext")
	s := sharedCorpus(t).Get("text.pdf")
	e := New(Options{TempDir: t.TempDir()})
	out := filepath.Join(t.TempDir(), "searchable.pdf")
	res, err := e.Process(context.Background(), s.Path, Request{Language: "auto", Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if !res.BornDigital || res.Quality != 100 || res.Pages != 3 || res.OCRPages != 0 || res.Engine != "text_layer" || !res.Searchable {
		t.Fatalf("result %+v", res)
	}
	if cer := corpus.CER(s.Text, res.Text); cer > 0 {
		t.Fatalf("text layer CER %.4f", cer)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}
	// A caller that keeps the original needs no copy of it.
	skipped := filepath.Join(t.TempDir(), "skipped.pdf")
	res, err = e.Process(context.Background(), s.Path, Request{Searchable: skipped, SkipBornDigitalCopy: true})
	if err != nil || !res.BornDigital || res.Searchable || res.Text == "" {
		t.Fatalf("skip copy: %+v, %v", res, err)
	}
	if _, err := os.Stat(skipped); !os.IsNotExist(err) {
		t.Fatalf("searchable PDF written for a born-digital PDF: %v", err)
	}
}

func TestMixedDocumentKeepsTextPages(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "tesseract", "pdfunite", "pdfseparate", "img2pdf")
	c := sharedCorpus(t)
	scan := toPDF(t, c.Get("scan_clean.png"))
	mixed := filepath.Join(t.TempDir(), "mixed.pdf")
	if err := exec.Command("pdfunite", c.Get("invoice.pdf").Path, scan, mixed).Run(); err != nil {
		t.Fatal(err)
	}
	e := New(Options{TempDir: t.TempDir()})
	out := filepath.Join(t.TempDir(), "searchable.pdf")
	res, err := e.Process(context.Background(), mixed, Request{Language: "eng+deu", Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 2 || res.OCRPages != 1 || res.BornDigital {
		t.Fatalf("result %+v", res)
	}
	pages := strings.Split(res.Text, "\f")
	if len(pages) != 2 || corpus.CER(c.Get("invoice.pdf").Text, pages[0]) > 0 || corpus.CER(c.Get("scan_clean.png").Text, pages[1]) > 0.02 {
		t.Fatalf("pages %q", pages)
	}
	info, _ := exec.Command("pdfinfo", out).Output()
	if !strings.Contains(string(info), "Pages:           2") {
		t.Fatalf("searchable pdf:\n%s", info)
	}
}

func TestLanguages(t *testing.T) {
	corpus.RequireTools(t, "tesseract")
	e := New(Options{})
	ctx := context.Background()
	langs, err := e.Languages(ctx)
	if err != nil || len(langs) == 0 {
		t.Fatalf("%v %v", langs, err)
	}
	if got, err := e.ResolveLanguage(ctx, "auto"); err != nil || got != "eng+deu" {
		t.Fatalf("auto = %q %v", got, err)
	}
	e2 := New(Options{DefaultLanguage: "fra"})
	if got, err := e2.ResolveLanguage(ctx, ""); err != nil || got != "fra" {
		t.Fatalf("default = %q %v", got, err)
	}
	for _, bad := range []string{"xyz", "eng+zzz", "eng;rm", "../eng"} {
		if _, err := e.ResolveLanguage(ctx, bad); docflow.ErrorCode(err) != docflow.EINVALID {
			t.Errorf("%q: %v", bad, err)
		}
	}
	_, err = e.ResolveLanguage(ctx, "jpn")
	if err == nil || !strings.Contains(docflow.ErrorMessage(err), "tesseract-ocr-jpn") {
		t.Errorf("missing pack message: %v", err)
	}
}

func TestBadPDFs(t *testing.T) {
	corpus.RequireTools(t, "pdftotext")
	c := sharedCorpus(t)
	e := New(Options{})
	for name, want := range map[string]string{"encrypted.pdf": "encrypted", "corrupt.pdf": "corrupt", "zero_pages.pdf": "no pages"} {
		_, err := e.Process(context.Background(), c.Get(name).Path, Request{})
		if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(docflow.ErrorMessage(err), want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMissingTool(t *testing.T) {
	s := sharedCorpus(t).Get("text.pdf")
	t.Setenv("PATH", t.TempDir())
	_, err := New(Options{}).Process(context.Background(), s.Path, Request{})
	if docflow.ErrorCode(err) != docflow.EUNAVAILABLE || docflow.ErrorMessage(err) != "pdftotext not found on PATH: install poppler-utils" {
		t.Fatalf("got %v", err)
	}
}

// TestLongTextPDF: a 500-page born-digital PDF is read in one pdftotext
// run, without rasterising a page.
func TestLongTextPDF(t *testing.T) {
	corpus.RequireTools(t, "pdftotext")
	pages := make([][]string, 500)
	for i := range pages {
		pages[i] = corpus.Lines(int64(i), 40, 80)
	}
	p := filepath.Join(t.TempDir(), "long.pdf")
	if err := corpus.WriteTextPDF(p, pages); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	res, err := New(Options{}).Process(context.Background(), p, Request{Searchable: filepath.Join(t.TempDir(), "o.pdf")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != 500 || !res.BornDigital || res.Quality != 100 {
		t.Fatalf("result pages %d born %v", res.Pages, res.BornDigital)
	}
	t.Logf("500 text pages in %s", time.Since(start))
}

// TestLongScannedPDF OCRs 200 image pages (small ones, to keep the run
// short) and checks that the Go heap stays flat: the PDF is inspected
// once, each page's image is copied out to disk in its turn, and only
// texts are kept.
func TestLongScannedPDF(t *testing.T) {
	const longPages = 200
	if testing.Short() {
		t.Skip("200-page OCR takes about 15 s; skipped with -short")
	}
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "tesseract", "pdfunite", "img2pdf")
	img, err := corpus.RenderPage([]string{"Page text"}, corpus.ScanOptions{WidthMM: 30, HeightMM: 12, FontSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	png := filepath.Join(dir, "p.png")
	if err := corpus.WritePNG(png, img, 300); err != nil {
		t.Fatal(err)
	}
	args := []string{"-o", filepath.Join(dir, "long.pdf")}
	for i := 0; i < longPages; i++ {
		args = append(args, png)
	}
	if out, err := exec.Command("img2pdf", args...).CombinedOutput(); err != nil {
		t.Fatalf("img2pdf: %v %s", err, out)
	}
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > peak.Load() {
				peak.Store(ms.HeapAlloc)
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	res, err := New(Options{Parallelism: 2, TempDir: dir, MinPageChars: 1}).Process(context.Background(), filepath.Join(dir, "long.pdf"),
		Request{Language: "eng", Searchable: filepath.Join(dir, "out.pdf")})
	close(stop)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if res.Pages != longPages || res.OCRPages != longPages || res.ExtractedPages != longPages || strings.Count(res.Text, "Page") < longPages*9/10 {
		t.Fatalf("pages %d ocr %d extracted %d text %q…", res.Pages, res.OCRPages, res.ExtractedPages, res.Text[:min(200, len(res.Text))])
	}
	t.Logf("%d scanned pages in %s, peak Go heap %d MiB", longPages, time.Since(start), peak.Load()>>20)
	if peak.Load() > 200<<20 {
		t.Errorf("Go heap peaked at %d MiB", peak.Load()>>20)
	}
}

func TestCancel(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "pdftoppm", "tesseract", "img2pdf")
	pdf := toPDF(t, sharedCorpus(t).Get("scan_multi.tiff"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := New(Options{}).Process(ctx, pdf, Request{Language: "eng"})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
}

func TestCloudNotConfigured(t *testing.T) {
	_, err := New(Options{}).Process(context.Background(), "x.pdf", Request{ForceCloud: true})
	want := "cloud OCR is not configured: set AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT and AZURE_DOCUMENT_INTELLIGENCE_KEY"
	if docflow.ErrorCode(err) != docflow.EUNAVAILABLE || docflow.ErrorMessage(err) != want {
		t.Fatalf("got %v", err)
	}
	if _, err := NewAzure(AzureConfig{Endpoint: "https://x"}); docflow.ErrorMessage(err) != want {
		t.Fatalf("got %v", err)
	}
}

// azureServer speaks the Document Intelligence analyze API: POST returns
// 202 with Operation-Location; the first poll says running, the next
// succeeded (or failed).
func azureServer(t *testing.T, fail bool) (*httptest.Server, *atomic.Int32) {
	var polls atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Ocp-Apim-Subscription-Key") != "key" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":"401","message":"Access denied"}}`)
			return
		}
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/documentintelligence/documentModels/prebuilt-read:analyze":
			if r.URL.Query().Get("api-version") != "2024-11-30" || r.Header.Get("Content-Type") != "application/pdf" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			body, _ := io.ReadAll(r.Body)
			if !strings.HasPrefix(string(body), "%PDF-") {
				http.Error(w, "not a pdf", http.StatusBadRequest)
				return
			}
			w.Header().Set("Operation-Location", srv.URL+"/documentintelligence/documentModels/prebuilt-read/analyzeResults/op1?api-version=2024-11-30")
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusAccepted)
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/analyzeResults/op1"):
			w.Header().Set("Content-Type", "application/json")
			if polls.Add(1) == 1 {
				w.Header().Set("Retry-After", "0")
				fmt.Fprint(w, `{"status":"running"}`)
				return
			}
			if fail {
				fmt.Fprint(w, `{"status":"failed","error":{"code":"InvalidContent","message":"The file is corrupted"}}`)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{
				"status": "succeeded",
				"analyzeResult": map[string]any{
					"apiVersion": "2024-11-30", "modelId": "prebuilt-read",
					"content": "The committee approved the annual budget.\nSecond line.",
					"pages": []any{map[string]any{"pageNumber": 1, "words": []any{
						map[string]any{"content": "The", "confidence": 0.99}, map[string]any{"content": "committee", "confidence": 0.95}}}},
				},
			})
		default:
			http.NotFound(w, r)
		}
	}))
	return srv, &polls
}

func TestAzure(t *testing.T) {
	srv, polls := azureServer(t, false)
	defer srv.Close()
	az, err := NewAzure(AzureConfig{Endpoint: srv.URL + "/", Key: "key", PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s := sharedCorpus(t).Get("text.pdf")
	out := filepath.Join(t.TempDir(), "o.pdf")
	res, err := New(Options{Cloud: az}).Process(context.Background(), s.Path, Request{ForceCloud: true, Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "The committee approved the annual budget.\nSecond line." || res.Pages != 1 || res.Engine != "azure_document_intelligence" ||
		res.MeanConfidence < 96.9 || res.MeanConfidence > 97.1 || polls.Load() != 2 || !res.Searchable {
		t.Fatalf("result %+v polls %d", res, polls.Load())
	}

	srv2, _ := azureServer(t, true)
	defer srv2.Close()
	az, _ = NewAzure(AzureConfig{Endpoint: srv2.URL, Key: "key", PollInterval: 10 * time.Millisecond})
	_, err = az.Recognize(context.Background(), s.Path)
	if docflow.ErrorCode(err) != docflow.EBADGATEWAY || !strings.Contains(err.Error(), "The file is corrupted") {
		t.Fatalf("failed analysis: %v", err)
	}
	az, _ = NewAzure(AzureConfig{Endpoint: srv2.URL, Key: "wrong"})
	if _, err = az.Recognize(context.Background(), s.Path); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("bad key: %v", err)
	}
}

func TestTSVConfidence(t *testing.T) {
	tsv := "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" +
		"1\t1\t0\t0\t0\t0\t0\t0\t100\t100\t-1\t\n" +
		"5\t1\t1\t1\t1\t1\t0\t0\t10\t10\t90.5\tHello\n" +
		"5\t1\t1\t1\t1\t2\t0\t0\t10\t10\t80.5\tworld\n" +
		"5\t1\t1\t1\t1\t3\t0\t0\t10\t10\t95\t \n"
	sum, n := tsvConfidence([]byte(tsv))
	if n != 2 || sum != 171 {
		t.Fatalf("sum %v n %d", sum, n)
	}
}

func TestOCRmyPDFRenderer(t *testing.T) {
	corpus.RequireTools(t, "pdftotext", "ocrmypdf", "img2pdf")
	s := sharedCorpus(t).Get("scan_clean.png")
	pdf := toPDF(t, s)
	out := filepath.Join(t.TempDir(), "searchable.pdf")
	res, err := New(Options{Renderer: RendererOCRmyPDF, Parallelism: 1, TempDir: t.TempDir()}).Process(context.Background(), pdf, Request{Language: "eng", Searchable: out})
	if err != nil {
		t.Fatal(err)
	}
	if res.Engine != "ocrmypdf" || res.OCRPages != 1 || res.MeanConfidence != -1 {
		t.Fatalf("result %+v", res)
	}
	if cer := corpus.CER(s.Text, res.Text); cer > 0.02 {
		t.Fatalf("CER %.4f: %q", cer, res.Text)
	}
	if cer := corpus.CER(s.Text, pdfText(t, out)); cer > 0.03 {
		t.Fatalf("searchable layer CER %.4f", cer)
	}
}
