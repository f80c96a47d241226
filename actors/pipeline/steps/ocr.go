package steps

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"docflow"
	"docflow/internal/proc"
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
// A scanned page that is one image (what convert_to_pdf makes of an image
// upload) is read from that image, not rasterised again (processing/ocr).
type ocrStep struct {
	d Deps
	// One engine per (renderer, pool size): each bounds its Tesseract
	// processes across every document it reads.
	engines onceMap[engineKey, *ocr.Engine]
}

type engineKey struct {
	renderer   string
	pool       int
	pagePixels int64
}

// pagePixels is the bound on one page's raster that TOOL_MEMORY_LIMIT
// allows: Tesseract takes up to about 15 bytes per pixel of a page, so a
// sixteenth of the limit in pixels (64 Mi pixels for 1 GiB).
func pagePixels(memoryLimit int64) int64 {
	if memoryLimit <= 0 {
		return ocr.DefaultMaxPagePixels
	}
	return max(memoryLimit/16, 1<<20)
}

var _ docflow.Step = (*ocrStep)(nil)

func newOCRStep(d Deps) *ocrStep {
	return &ocrStep{d: d}
}

func (s *ocrStep) Type() string { return docflow.StepOCR }

// toolTimeout bounds pdfinfo.
const toolTimeout = 5 * time.Minute

// poolSize is the step's pool from STEP_POOL_SIZES (ocr=N), else the core
// count: the Tesseract processes that run at once.
func poolSize(st docflow.SettingsStore, stepType string) int {
	for _, part := range strings.Split(docflow.StepPoolSizes.Get(st), ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.TrimSpace(k) == stepType {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
				return n
			}
		}
	}
	// GOMAXPROCS, not NumCPU: it follows a container's CPU limit.
	return runtime.GOMAXPROCS(0)
}

func (s *ocrStep) engine() *ocr.Engine {
	k := engineKey{renderer: strings.ToLower(strings.TrimSpace(docflow.OCRRenderer.Get(s.d.Settings))), pool: poolSize(s.d.Settings, docflow.StepOCR),
		pagePixels: pagePixels(proc.MemoryLimit())}
	switch k.renderer {
	case ocr.RendererOCRmyPDF, ocr.RendererAuto:
	default:
		k.renderer = ocr.RendererTesseract
	}
	e, _ := s.engines.get(k, func() (*ocr.Engine, error) {
		return ocr.New(ocr.Options{Parallelism: k.pool, Renderer: k.renderer, MaxPagePixels: k.pagePixels, TempDir: s.d.TempDir}), nil
	})
	return e
}

// language resolves the step's ocr_language: auto (or empty) is the
// TESSERACT_LANGUAGE setting, default eng+deu, with the Tesseract
// languages of EASYOCR_LANGUAGES added (docflow has no EasyOCR engine).
func (s *ocrStep) language(cfg map[string]any) string {
	lang := stringOf(cfg, "ocr_language")
	if lang == "" || lang == "auto" {
		lang = docflow.OCRLanguagesWithEasyOCR(docflow.TesseractLanguage.Get(s.d.Settings), docflow.EasyOCRLanguages.Get(s.d.Settings))
	}
	if lang == "" {
		lang = ocr.DefaultLanguage
	}
	return lang
}

func (s *ocrStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	toolMemoryLimit(s.d.Settings)
	f := in.File
	pdf, err := currentPDF(ctx, in)
	if err != nil {
		return nil, err
	}
	if _, err := convert.CheckPDF(ctx, pdf, toolTimeout); err != nil {
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
	note := ""
	if res.Searchable {
		path := out
		if f.ProcessedBlob == "" {
			// Read from the original (no convert_to_pdf, which cleans):
			// the searchable PDF keeps its text pages as they were.
			info, err := convert.CheckPDF(ctx, out, toolTimeout)
			if err != nil {
				return nil, fmt.Errorf("searchable PDF: %w", err)
			}
			clean := tempPath(s.d, "ocr-clean", ".pdf")
			defer os.Remove(clean)
			if path, note, err = withoutActiveContent(ctx, out, clean, info.Active); err != nil {
				return nil, err
			}
		}
		blob, err := putFile(ctx, in.Blobs, path)
		if err != nil {
			return nil, err
		}
		f.ProcessedBlob = blob.Key
	}
	r := ocrResult(res, fileSize(pdf))
	r.Message += note
	return r, nil
}

// ocrResult reports a reading that ran OCR.
func ocrResult(res *ocr.Result, bytes int64) *docflow.StepResult {
	return &docflow.StepResult{
		Message: fmt.Sprintf("OCR (%s, %s) read %d of %d pages: %d characters, mean confidence %.0f, quality %.0f",
			res.Engine, res.Language, res.OCRPages, res.Pages, len(res.Text), res.MeanConfidence, res.Quality),
		Bytes: bytes,
	}
}

// cloud reads the PDF with Azure Document Intelligence. Without an
// endpoint and key it fails at once with a message naming the settings: a
// retry cannot configure them.
func (s *ocrStep) cloud(ctx context.Context, in *docflow.StepInput, pdf string) (*docflow.StepResult, error) {
	endpoint := strings.TrimSpace(docflow.AzureDocumentIntelligenceEndpoint.Get(s.d.Settings))
	if endpoint == "" {
		endpoint = docflow.AzureRegionalEndpoint(docflow.AzureRegion.Get(s.d.Settings))
	}
	key := strings.TrimSpace(docflow.AzureDocumentIntelligenceKey.Get(s.d.Settings))
	if endpoint == "" || key == "" {
		return nil, invalidf("cloud OCR was requested but no provider is configured: set AZURE_DOCUMENT_INTELLIGENCE_ENDPOINT (or AZURE_REGION) and AZURE_DOCUMENT_INTELLIGENCE_KEY")
	}
	az, err := ocr.NewAzure(ocr.AzureConfig{Endpoint: endpoint, Key: key, PollInterval: azurePoll, HTTPClient: s.d.HTTPClient})
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
