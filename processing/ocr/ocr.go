// Package ocr reads the text of a PDF. Pages that carry a text layer
// (born-digital) are read with poppler's pdftotext and score 100; the other
// pages are read by Tesseract, pages in parallel up to a bound shared by
// every document of the Engine. A page that is one image covering it (what
// scanners, img2pdf and processing/convert write: a JPEG, or PNG data kept
// as FlateDecode with PNG predictors) is read from the image itself, copied
// out of the PDF as a .jpg or .png without decoding a pixel; any other page
// is rasterised (pdftoppm), one at a time.
// The searchable PDF keeps text pages as they are and replaces scanned
// pages with Tesseract's image-plus-text pages, or is made by OCRmyPDF when
// that renderer is chosen. A cloud provider (Azure Document Intelligence)
// can replace Tesseract per request.
//
// Memory stays bounded for long documents: only Parallelism page images
// exist at a time, on disk, and only page texts are kept. The PDF is
// inspected for page images once per document, and only where each image
// lies in the file is kept until its page's turn.
package ocr

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"docflow"
	"docflow/internal/proc"
	"docflow/processing/quality"
)

// Renderers of the searchable PDF.
const (
	// RendererTesseract OCRs each page once with Tesseract, taking text,
	// confidence and the page PDF from the same run; pdfunite assembles.
	RendererTesseract = "tesseract"
	// RendererOCRmyPDF hands the whole document to OCRmyPDF (--skip-text),
	// which keeps the original page content under the text layer; text
	// comes from its sidecar, and no confidence is reported.
	RendererOCRmyPDF = "ocrmypdf"
	// RendererAuto is OCRmyPDF when installed, else Tesseract.
	RendererAuto = "auto"
)

// DefaultLanguage is used for "auto" when Options.DefaultLanguage is empty
// (the TESSERACT_LANGUAGE setting's default).
const DefaultLanguage = "eng+deu"

// Options configure an Engine. Zero values take the defaults.
type Options struct {
	Tesseract string // binary; default "tesseract" on PATH
	// Parallelism bounds the Tesseract processes running at once across
	// all documents of this Engine (default: the number of CPUs).
	Parallelism int
	// DefaultLanguage replaces "auto" (default "eng+deu").
	DefaultLanguage string
	DPI             int // rasterisation resolution; default 300
	// MaxPagePixels bounds the image of a page read by Tesseract (default
	// DefaultMaxPagePixels): a page that would be larger at DPI is
	// rasterised at the resolution that fits, down to MinDPI; a page too
	// large even then fails the document (EINVALID) before any page is
	// rendered. A page image larger than this is rasterised, not read as
	// it is.
	MaxPagePixels int64
	// MinDPI is the lowest resolution a page is rasterised at to fit
	// MaxPagePixels (default DefaultMinDPI).
	MinDPI int
	// MinPageChars is the number of non-space characters from which a
	// page's text layer counts as real text (default 20).
	MinPageChars int
	// Renderer picks how the searchable PDF is made (default
	// RendererTesseract).
	Renderer string
	// PageTimeout bounds one page (image extraction or rasterisation,
	// and OCR; default 3 min).
	PageTimeout time.Duration
	// DocTimeout bounds pdftotext, pdfunite and OCRmyPDF runs on the whole
	// document (default 30 min).
	DocTimeout time.Duration
	// Cloud is used when a request forces cloud OCR (nil: not configured).
	Cloud   CloudOCR
	TempDir string
}

// Request is one document to read.
type Request struct {
	// Language is a Tesseract language expression ("eng", "deu+fra") or
	// "auto"/"" for the default.
	Language string
	// ForceCloud uses the cloud provider instead of Tesseract.
	ForceCloud bool
	// Searchable, when set, is where the searchable PDF is written.
	Searchable string
	// SkipBornDigitalCopy leaves Searchable unwritten (Result.Searchable
	// false) when no page needs OCR: the PDF is then its own searchable
	// version and a caller that keeps it needs no copy.
	SkipBornDigitalCopy bool
}

// Result is what Process found.
type Result struct {
	Text string `json:"-"`
	// Pages in the document; OCRPages of them needed OCR.
	Pages    int `json:"pages"`
	OCRPages int `json:"ocr_pages"`
	// ExtractedPages of the OCRPages were read by Tesseract from the
	// page's own image (JPEG or PNG data copied out of the PDF) instead of
	// a rasterisation of the page.
	ExtractedPages int `json:"extracted_pages"`
	// BornDigital: every page had a text layer; no OCR ran.
	BornDigital bool `json:"born_digital"`
	// MeanConfidence of the OCR engine over all words (0–100), or -1.
	MeanConfidence float64 `json:"mean_confidence"`
	Language       string  `json:"language,omitempty"`
	// Engine is text_layer, tesseract, ocrmypdf or the cloud provider's
	// name.
	Engine string `json:"engine"`
	// Quality is the OCR quality score of decisions.md.
	Quality float64 `json:"quality"`
	// Searchable reports that Request.Searchable was written.
	Searchable bool `json:"searchable"`
}

// Engine runs OCR. It is safe for concurrent use.
type Engine struct {
	opts Options
	sem  chan struct{}
	// inspect lets one document at a time read its PDF for page images
	// (see pageImages).
	inspect chan struct{}
	// noExtract rasterises every page, as before page images were read
	// as they are (tests compare the two).
	noExtract bool

	mu    sync.Mutex
	langs []string // installed Tesseract languages, once known
}

// New returns an Engine. Tools are looked up when used, so a missing one
// fails the document that needs it with a message naming it.
func New(opts Options) *Engine {
	if opts.Tesseract == "" {
		opts.Tesseract = "tesseract"
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = runtime.GOMAXPROCS(0)
	}
	if opts.DefaultLanguage == "" || opts.DefaultLanguage == "auto" {
		opts.DefaultLanguage = DefaultLanguage
	}
	if opts.DPI <= 0 {
		opts.DPI = 300
	}
	if opts.MaxPagePixels <= 0 {
		opts.MaxPagePixels = DefaultMaxPagePixels
	}
	if opts.MinDPI <= 0 {
		opts.MinDPI = DefaultMinDPI
	}
	if opts.MinPageChars <= 0 {
		opts.MinPageChars = 20
	}
	if opts.Renderer == "" {
		opts.Renderer = RendererTesseract
	}
	if opts.PageTimeout <= 0 {
		opts.PageTimeout = 3 * time.Minute
	}
	if opts.DocTimeout <= 0 {
		opts.DocTimeout = 30 * time.Minute
	}
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	return &Engine{opts: opts, sem: make(chan struct{}, opts.Parallelism), inspect: make(chan struct{}, 1)}
}

var reLangCode = regexp.MustCompile(`^[a-z]{3}(_[a-z]{3,4})?$`)

// Languages returns the installed Tesseract languages (osd excluded).
func (e *Engine) Languages(ctx context.Context) ([]string, error) {
	e.mu.Lock()
	if e.langs != nil {
		defer e.mu.Unlock()
		return slices.Clone(e.langs), nil
	}
	e.mu.Unlock()
	bin, err := proc.Look(e.opts.Tesseract)
	if err != nil {
		return nil, err
	}
	res, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"--list-langs"}, Timeout: 30 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("list tesseract languages: %w", err)
	}
	var langs []string
	for _, l := range strings.Split(string(res.Stdout), "\n") {
		l = strings.TrimSpace(l)
		if reLangCode.MatchString(l) && l != "osd" {
			langs = append(langs, l)
		}
	}
	slices.Sort(langs)
	e.mu.Lock()
	e.langs = langs
	e.mu.Unlock()
	return slices.Clone(langs), nil
}

// ResolveLanguage turns a step's ocr_language into a Tesseract language
// expression: "auto" or "" becomes the default; every code must be
// installed (EINVALID otherwise, listing what is).
func (e *Engine) ResolveLanguage(ctx context.Context, lang string) (string, error) {
	lang = strings.ToLower(strings.TrimSpace(lang))
	if lang == "" || lang == "auto" {
		lang = e.opts.DefaultLanguage
	}
	installed, err := e.Languages(ctx)
	if err != nil {
		return "", err
	}
	codes := strings.Split(lang, "+")
	for _, c := range codes {
		if !reLangCode.MatchString(c) {
			return "", docflow.Errorf(docflow.EINVALID, "invalid OCR language code %q: use Tesseract codes such as eng or deu joined with +", c)
		}
		if !slices.Contains(installed, c) {
			return "", docflow.Errorf(docflow.EINVALID, "OCR language %q is not installed (installed: %s): install tesseract-ocr-%s", c, strings.Join(installed, ", "), strings.ReplaceAll(c, "_", "-"))
		}
	}
	return strings.Join(codes, "+"), nil
}

// Process reads the text of a PDF (the output of convert_to_pdf) and, when
// req.Searchable is set, writes the searchable PDF there.
func (e *Engine) Process(ctx context.Context, pdf string, req Request) (*Result, error) {
	if req.ForceCloud {
		return e.cloud(ctx, pdf, req)
	}
	pages, need, err := e.pagesToRead(ctx, pdf)
	if err != nil {
		return nil, err
	}
	res := &Result{Pages: len(pages), MeanConfidence: quality.NoConfidence}
	if len(need) == 0 {
		res.BornDigital = true
		res.Engine = "text_layer"
		res.Text = joinPages(pages)
		res.Quality = quality.BornDigital
		if req.Searchable != "" && !req.SkipBornDigitalCopy {
			if err := copyFile(pdf, req.Searchable); err != nil {
				return nil, err
			}
			res.Searchable = true
		}
		return res, nil
	}
	lang, err := e.ResolveLanguage(ctx, req.Language)
	if err != nil {
		return nil, err
	}
	res.Language = lang
	res.OCRPages = len(need)

	renderer := e.opts.Renderer
	if renderer == RendererAuto {
		renderer = RendererTesseract
		if _, err := proc.Look("ocrmypdf"); err == nil {
			renderer = RendererOCRmyPDF
		}
	}
	if renderer == RendererOCRmyPDF {
		return e.ocrmypdf(ctx, pdf, lang, pages, need, req, res)
	}
	return e.tesseract(ctx, pdf, lang, pages, need, req, res)
}

// pagesToRead returns the text layer of every page and the 1-based numbers
// of the pages without one (fewer than MinPageChars non-space characters).
func (e *Engine) pagesToRead(ctx context.Context, pdf string) ([]string, []int, error) {
	pages, err := e.textLayer(ctx, pdf)
	if err != nil {
		return nil, nil, err
	}
	var need []int
	for i, p := range pages {
		if nonSpace(p) < e.opts.MinPageChars {
			need = append(need, i+1)
		}
	}
	return pages, need, nil
}

func nonSpace(s string) int {
	n := 0
	for _, r := range s {
		if r > ' ' && r != '\u00a0' {
			n++
		}
	}
	return n
}

// joinPages joins page texts with form feeds, as pdftotext separates them.
func joinPages(pages []string) string {
	for i := range pages {
		pages[i] = strings.TrimRight(pages[i], " \n")
	}
	return strings.TrimSpace(strings.Join(pages, "\n\f"))
}

// textLayer returns the text of every page (pdftotext separates pages with
// form feeds). It also tells an unreadable PDF from a readable one.
func (e *Engine) textLayer(ctx context.Context, pdf string) ([]string, error) {
	bin, err := proc.Look("pdftotext")
	if err != nil {
		return nil, err
	}
	res, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"-enc", "UTF-8", pdf, "-"}, Timeout: e.opts.DocTimeout})
	if err != nil {
		switch {
		case res != nil && strings.Contains(res.Stderr, "Incorrect password"):
			return nil, docflow.Errorf(docflow.EINVALID, "PDF is encrypted with a password: remove the password and upload it again")
		case res != nil && strings.Contains(res.Stderr, "Invalid page count 0"):
			return nil, docflow.Errorf(docflow.EINVALID, "PDF has no pages")
		}
		if c := docflow.ErrorCode(err); c == docflow.ETIMEOUT || ctx.Err() != nil {
			return nil, err
		}
		return nil, docflow.Errorf(docflow.EINVALID, "PDF is corrupt or unreadable: %v", err)
	}
	pages := strings.Split(string(res.Stdout), "\f")
	// pdftotext ends every page with \f, so the last element is empty.
	if len(pages) > 0 && strings.TrimSpace(pages[len(pages)-1]) == "" {
		pages = pages[:len(pages)-1]
	}
	if len(pages) == 0 {
		return nil, docflow.Errorf(docflow.EINVALID, "PDF has no pages")
	}
	return pages, nil
}

func (e *Engine) workDir() (string, func(), error) {
	dir, err := os.MkdirTemp(e.opts.TempDir, "docflow-ocr-")
	if err != nil {
		return "", nil, fmt.Errorf("ocr work dir: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

func copyFile(src, dst string) error {
	b, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer b.Close()
	tmp := dst + ".part"
	out, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if _, err := out.ReadFrom(b); err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("copy: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	return os.Rename(tmp, dst)
}

func pagePath(dir, prefix string, page int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%05d", prefix, page))
}
