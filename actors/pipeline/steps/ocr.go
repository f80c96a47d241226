package steps

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sync/semaphore"

	"docflow"
	"docflow/processing/convert"
	"docflow/processing/ocr"
	"docflow/processing/quality"
)

// ocrStep is ocr, on processing/ocr: a page with a text layer is read with
// poppler; the other pages are rasterised and read by Tesseract, pages in
// parallel, and the processed version becomes a searchable PDF (Tesseract's
// pages, or OCRmyPDF's with OCR_RENDERER=ocrmypdf). force_cloud_ocr (step
// config or run option) sends the PDF to Azure Document Intelligence.
//
// A one-page PNG original is read by Tesseract directly: rasterising its
// img2pdf wrapper again would cost about as much CPU as the OCR itself and
// blur what the scanner delivered.
type ocrStep struct {
	d Deps
	// One engine per (renderer, pool size): each bounds its Tesseract
	// processes across every document it reads.
	engines onceMap[engineKey, *ocr.Engine]
	// tesseracts bounds the direct PNG readings the same way.
	tesseracts *semaphore.Weighted
}

type engineKey struct {
	renderer string
	pool     int
}

var _ docflow.Step = (*ocrStep)(nil)

func newOCRStep(d Deps) *ocrStep {
	return &ocrStep{d: d, tesseracts: semaphore.NewWeighted(int64(runtime.NumCPU()))}
}

func (s *ocrStep) Type() string { return docflow.StepOCR }

// toolTimeout bounds pdfinfo.
const toolTimeout = 5 * time.Minute

// poolSize is the step's pool from STEP_POOL_SIZES (ocr=N), else the core
// count: the Tesseract processes that run at once.
func poolSize(st docflow.SettingsService, stepType string) int {
	for _, part := range strings.Split(st.Get("STEP_POOL_SIZES"), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.TrimSpace(k) == stepType {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				return n
			}
		}
	}
	return runtime.NumCPU()
}

func (s *ocrStep) engine() *ocr.Engine {
	k := engineKey{renderer: strings.ToLower(strings.TrimSpace(s.d.Settings.Get("OCR_RENDERER"))), pool: poolSize(s.d.Settings, docflow.StepOCR)}
	switch k.renderer {
	case ocr.RendererOCRmyPDF, ocr.RendererAuto:
	default:
		k.renderer = ocr.RendererTesseract
	}
	e, _ := s.engines.get(k, func() (*ocr.Engine, error) {
		return ocr.New(ocr.Options{Parallelism: k.pool, Renderer: k.renderer, TempDir: s.d.TempDir}), nil
	})
	return e
}

// language resolves the step's ocr_language: auto (or empty) is the
// TESSERACT_LANGUAGE setting, default eng+deu.
func (s *ocrStep) language(cfg map[string]any) string {
	lang := stringOf(cfg, "ocr_language")
	if lang == "" || lang == "auto" {
		lang = strings.TrimSpace(s.d.Settings.Get("TESSERACT_LANGUAGE"))
	}
	if lang == "" {
		lang = ocr.DefaultLanguage
	}
	return lang
}

func (s *ocrStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	f := in.File
	pdf, err := currentPDF(ctx, in)
	if err != nil {
		return nil, err
	}
	info, err := convert.CheckPDF(ctx, pdf, toolTimeout)
	if err != nil {
		return nil, err
	}
	if boolOf(in.Config, "force_cloud_ocr", false) || boolOf(in.Options, "force_cloud_ocr", false) {
		return s.cloud(ctx, in, pdf)
	}
	eng := s.engine()
	lang, err := eng.ResolveLanguage(ctx, s.language(in.Config))
	if err != nil {
		return nil, err
	}
	if info.Pages == 1 && strings.EqualFold(f.MimeType, "image/png") && f.OriginalBlob != "" {
		if res, ok, err := s.pngDirect(ctx, in, pdf, lang); ok || err != nil {
			return res, err
		}
	}
	// NOTE: no work directory: a born-digital PDF (the common case) needs
	// none, and the engine keeps its page files in its own.
	out := tempPath(s.d, "ocr", ".pdf")
	defer os.Remove(out)
	res, err := eng.Process(ctx, pdf, ocr.Request{Language: lang, Searchable: out, SkipBornDigitalCopy: true})
	if err != nil {
		return nil, err
	}
	f.OCRText = res.Text
	score := res.Quality
	f.OCRQualityScore = &score
	if res.BornDigital {
		return &docflow.StepResult{
			Message: fmt.Sprintf("Text layer read from %d pages (born-digital, quality %.0f)", res.Pages, score),
			Bytes:   fileSize(pdf),
		}, nil
	}
	if res.Searchable {
		blob, err := putFile(ctx, in.Blobs, out)
		if err != nil {
			return nil, err
		}
		f.ProcessedBlob = blob.Key
	}
	return &docflow.StepResult{
		Message: fmt.Sprintf("OCR (%s, %s) read %d of %d pages: %d characters, mean confidence %.0f, quality %.0f",
			res.Engine, res.Language, res.OCRPages, res.Pages, len(res.Text), res.MeanConfidence, score),
		Bytes: fileSize(pdf),
	}, nil
}

// pngDirect reads a one-page PNG original with Tesseract. ok is false when
// the PDF version has a text layer after all (then the engine decides).
func (s *ocrStep) pngDirect(ctx context.Context, in *docflow.StepInput, pdf, lang string) (*docflow.StepResult, bool, error) {
	f := in.File
	layer, err := runTool(ctx, toolTimeout, nil, "pdftotext", "-enc", "UTF-8", pdf, "-")
	if err != nil {
		return nil, false, fmt.Errorf("read text layer: %w", err)
	}
	if textChars(string(layer)) >= minLayerChars {
		return nil, false, nil
	}
	src, err := in.Blobs.Path(ctx, f.OriginalBlob)
	if err != nil {
		return nil, false, fmt.Errorf("open original: %w", err)
	}
	dir, cleanup, err := workDir(s.d, "ocr")
	if err != nil {
		return nil, false, err
	}
	defer cleanup()
	if err := s.tesseracts.Acquire(ctx, 1); err != nil {
		return nil, false, err
	}
	r, err := tesseractPage(ctx, src, filepath.Join(dir, "p0"), lang, 0)
	s.tesseracts.Release(1)
	if err != nil {
		return nil, false, err
	}
	blob, err := putFile(ctx, in.Blobs, r.pdf)
	if err != nil {
		return nil, false, err
	}
	conf := quality.NoConfidence
	if r.words > 0 {
		conf = r.confSum / float64(r.words)
	}
	f.ProcessedBlob = blob.Key
	f.OCRText = strings.TrimSpace(r.text)
	score := quality.Score(f.OCRText, conf)
	f.OCRQualityScore = &score
	return &docflow.StepResult{
		Message: fmt.Sprintf("OCR (tesseract, %s) read 1 of 1 pages: %d characters, mean confidence %.0f, quality %.0f",
			lang, len(f.OCRText), conf, score),
		Bytes: fileSize(src),
	}, true, nil
}

// cloud reads the PDF with Azure Document Intelligence. Without an
// endpoint and key it fails at once with a message naming the settings: a
// retry cannot configure them.
func (s *ocrStep) cloud(ctx context.Context, in *docflow.StepInput, pdf string) (*docflow.StepResult, error) {
	endpoint := strings.TrimSpace(s.d.Settings.Get("AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT"))
	key := strings.TrimSpace(s.d.Settings.Get("AZURE_DOCUMENT_INTELLIGENCE_KEY"))
	if endpoint == "" || key == "" {
		return nil, invalidf("cloud OCR was requested but no provider is configured: set AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT and AZURE_DOCUMENT_INTELLIGENCE_KEY")
	}
	az, err := ocr.NewAzure(ocr.AzureConfig{Endpoint: endpoint, Key: key, PollInterval: azurePoll})
	if err != nil {
		return nil, err
	}
	res, err := az.Recognize(ctx, pdf)
	if err != nil {
		return nil, err
	}
	f := in.File
	f.OCRText = res.Text
	score := quality.Score(res.Text, res.MeanConfidence)
	f.OCRQualityScore = &score
	return &docflow.StepResult{
		Message: fmt.Sprintf("Cloud OCR (%s) read %d pages: %d characters, quality %.0f", az.Name(), res.Pages, len(res.Text), score),
		Bytes:   fileSize(pdf),
	}, nil
}

// azurePoll is the wait between polls when the service sends no
// Retry-After (tests shorten it).
var azurePoll = time.Second

// minLayerChars is the number of letters and digits from which a page's
// text layer counts as real text.
const minLayerChars = 16

// pageResult is Tesseract's reading of one page.
type pageResult struct {
	text    string
	pdf     string
	confSum float64 // sum of word confidences
	words   int
}

// tesseractPage reads one image with a single Tesseract run that writes
// the text, a searchable PDF page and the word confidences.
func tesseractPage(ctx context.Context, img, outBase, lang string, dpi int) (pageResult, error) {
	args := []string{img, outBase, "-l", lang}
	if dpi > 0 {
		args = append(args, "--dpi", strconv.Itoa(dpi))
	}
	args = append(args, "txt", "pdf", "tsv")
	// NOTE: Tesseract's own threading is slower than one thread per page
	// on small machines (FACTS.md); pages run in parallel instead.
	if _, err := runTool(ctx, 0, []string{"OMP_THREAD_LIMIT=1"}, "tesseract", args...); err != nil {
		return pageResult{}, err
	}
	txt, err := os.ReadFile(outBase + ".txt")
	if err != nil {
		return pageResult{}, fmt.Errorf("tesseract text: %w", err)
	}
	r := pageResult{text: strings.TrimRight(string(txt), "\f\n "), pdf: outBase + ".pdf"}
	if tsv, err := os.ReadFile(outBase + ".tsv"); err == nil {
		r.confSum, r.words = tsvConfidence(tsv)
	}
	os.Remove(outBase + ".txt")
	os.Remove(outBase + ".tsv")
	return r, nil
}

// tsvConfidence sums the confidences of the words (level 5 rows with text)
// of Tesseract's TSV output.
func tsvConfidence(tsv []byte) (float64, int) {
	var sum float64
	var n int
	sc := bufio.NewScanner(bytes.NewReader(tsv))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) < 12 || cols[0] != "5" || strings.TrimSpace(cols[11]) == "" {
			continue
		}
		c, err := strconv.ParseFloat(cols[10], 64)
		if err != nil || c < 0 {
			continue
		}
		sum += c
		n++
	}
	return sum, n
}

func textChars(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}
