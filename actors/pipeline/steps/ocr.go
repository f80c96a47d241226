package steps

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"docflow"
	"docflow/processing/convert"
	"docflow/processing/quality"
)

// ocrStep is ocr. A page with a text layer is read with poppler; the other
// pages are rasterised at 300 dpi and read by Tesseract, pages in parallel,
// and the processed version becomes a searchable PDF made of Tesseract's
// PDF pages (and the untouched pages that had text). force_cloud_ocr (step
// config or run option) sends the PDF to the cloud provider instead.
type ocrStep struct {
	d Deps
	// tesseracts bounds Tesseract processes across every document of the
	// process: with OMP_THREAD_LIMIT=1 one per core keeps both cores busy
	// without oversubscribing them.
	tesseracts *semaphore.Weighted

	langsMu sync.Mutex
	langs   []string // installed Tesseract languages, read once
}

var _ docflow.Step = (*ocrStep)(nil)

func newOCRStep(d Deps) *ocrStep {
	return &ocrStep{d: d, tesseracts: semaphore.NewWeighted(int64(runtime.NumCPU()))}
}

func (s *ocrStep) Type() string { return docflow.StepOCR }

// minLayerChars is the number of letters and digits below which a page is
// treated as having no usable text layer (a scan, or a stamp of a page
// number over one).
const minLayerChars = 16

// rasterDPI is the resolution pages are rasterised at for Tesseract.
const rasterDPI = 300

// toolTimeout bounds the poppler helpers (per call).
const toolTimeout = 5 * time.Minute

// poolSize is the step's pool from STEP_POOL_SIZES (ocr=N), else the core
// count: the number of pages of one document read at once.
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

// language resolves the step's ocr_language: auto (or empty) is the
// TESSERACT_LANGUAGE setting, default eng+deu.
func (s *ocrStep) language(cfg map[string]any) string {
	lang := stringOf(cfg, "ocr_language")
	if lang == "" || lang == "auto" {
		lang = strings.TrimSpace(s.d.Settings.Get("TESSERACT_LANGUAGE"))
	}
	if lang == "" {
		lang = "eng+deu"
	}
	return lang
}

// checkLanguages fails with a message naming the missing language packs.
func (s *ocrStep) checkLanguages(ctx context.Context, lang string) error {
	s.langsMu.Lock()
	defer s.langsMu.Unlock()
	if s.langs == nil {
		out, err := runTool(ctx, time.Minute, nil, "tesseract", "--list-langs")
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		langs := []string{}
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			if l != "" && !strings.Contains(l, " ") {
				langs = append(langs, l)
			}
		}
		s.langs = langs
	}
	var missing []string
	for _, l := range strings.Split(lang, "+") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(s.langs, l) {
			missing = append(missing, l)
		}
	}
	if len(missing) > 0 {
		pkgs := make([]string, len(missing))
		for i, m := range missing {
			pkgs[i] = "tesseract-ocr-" + strings.ReplaceAll(strings.ToLower(m), "_", "-")
		}
		return docflow.Errorf(docflow.EUNAVAILABLE, "Tesseract language %s not installed: install %s",
			strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return nil
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
	layer, err := runTool(ctx, toolTimeout, nil, "pdftotext", "-enc", "UTF-8", pdf, "-")
	if err != nil {
		return nil, fmt.Errorf("read text layer: %w", err)
	}
	pages := strings.Split(string(layer), "\f")
	if len(pages) > info.Pages {
		pages = pages[:info.Pages]
	}
	for len(pages) < info.Pages {
		pages = append(pages, "")
	}
	var need []int
	for i, p := range pages {
		if textChars(p) < minLayerChars {
			need = append(need, i)
		}
	}
	if len(need) == 0 {
		f.OCRText = joinPages(pages)
		score := quality.BornDigital
		f.OCRQualityScore = &score
		return &docflow.StepResult{
			Message: fmt.Sprintf("Text layer read from %d pages (born-digital, quality %.0f)", info.Pages, score),
			Bytes:   fileSize(pdf),
		}, nil
	}

	lang := s.language(in.Config)
	if err := s.checkLanguages(ctx, lang); err != nil {
		return nil, err
	}
	dir, cleanup, err := workDir(s.d, "ocr")
	if err != nil {
		return nil, err
	}
	defer cleanup()

	results := make([]pageResult, len(pages))
	// A single raster image needs no rasterising: Tesseract reads the
	// original at its own resolution.
	if len(pages) == 1 && strings.EqualFold(f.MimeType, "image/png") {
		src, err := in.Blobs.Path(ctx, f.OriginalBlob)
		if err != nil {
			return nil, fmt.Errorf("open original: %w", err)
		}
		if err := s.tesseracts.Acquire(ctx, 1); err != nil {
			return nil, err
		}
		results[0], err = tesseractPage(ctx, src, filepath.Join(dir, "p0"), lang, 0)
		s.tesseracts.Release(1)
		if err != nil {
			return nil, err
		}
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(poolSize(s.d.Settings, docflow.StepOCR))
		for _, i := range need {
			g.Go(func() error {
				img := filepath.Join(dir, fmt.Sprintf("p%d", i))
				n := strconv.Itoa(i + 1)
				if _, err := runTool(gctx, toolTimeout, nil, "pdftoppm", "-r", strconv.Itoa(rasterDPI), "-gray", "-png",
					"-f", n, "-l", n, "-singlefile", pdf, img); err != nil {
					return fmt.Errorf("rasterise page %d: %w", i+1, err)
				}
				if err := s.tesseracts.Acquire(gctx, 1); err != nil {
					return err
				}
				r, err := tesseractPage(gctx, img+".png", img, lang, rasterDPI)
				s.tesseracts.Release(1)
				os.Remove(img + ".png")
				if err != nil {
					return fmt.Errorf("page %d: %w", i+1, err)
				}
				results[i] = r
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
	}

	// Searchable PDF: Tesseract's page where it read one, the original
	// page elsewhere.
	parts := make([]string, len(pages))
	if len(need) < len(pages) {
		if _, err := runTool(ctx, toolTimeout, nil, "pdfseparate", pdf, filepath.Join(dir, "orig-%d.pdf")); err != nil {
			return nil, fmt.Errorf("split pdf: %w", err)
		}
	}
	var confSum float64
	var confWords int
	for i := range pages {
		if r := results[i]; r.pdf != "" {
			parts[i] = r.pdf
			pages[i] = r.text
			confSum += r.confSum
			confWords += r.words
		} else {
			parts[i] = filepath.Join(dir, fmt.Sprintf("orig-%d.pdf", i+1))
		}
	}
	out := filepath.Join(dir, "searchable.pdf")
	if len(parts) == 1 {
		out = parts[0]
	} else if err := unite(ctx, dir, parts, out); err != nil {
		return nil, err
	}
	blob, err := putFile(ctx, in.Blobs, out)
	if err != nil {
		return nil, err
	}
	f.ProcessedBlob = blob.Key
	f.OCRText = joinPages(pages)
	conf := quality.NoConfidence
	if confWords > 0 {
		conf = confSum / float64(confWords)
	}
	score := quality.Score(f.OCRText, conf)
	f.OCRQualityScore = &score
	return &docflow.StepResult{
		Message: fmt.Sprintf("OCR (%s) read %d of %d pages: %d characters, mean confidence %.0f, quality %.0f",
			lang, len(need), len(pages), len(f.OCRText), conf, score),
		Bytes: fileSize(pdf),
	}, nil
}

// unite joins page PDFs in order. pdfunite takes every file on its command
// line, so very long documents are joined in batches.
func unite(ctx context.Context, dir string, parts []string, out string) error {
	const batch = 200
	for len(parts) > batch {
		var next []string
		for i := 0; i < len(parts); i += batch {
			chunk := parts[i:min(i+batch, len(parts))]
			if len(chunk) == 1 {
				next = append(next, chunk[0])
				continue
			}
			p := filepath.Join(dir, fmt.Sprintf("u%d-%d.pdf", len(parts), i))
			if _, err := runTool(ctx, toolTimeout, nil, "pdfunite", append(chunk, p)...); err != nil {
				return fmt.Errorf("join pages: %w", err)
			}
			next = append(next, p)
		}
		parts = next
	}
	if _, err := runTool(ctx, toolTimeout, nil, "pdfunite", append(parts, out)...); err != nil {
		return fmt.Errorf("join pages: %w", err)
	}
	return nil
}

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

func joinPages(pages []string) string {
	trimmed := make([]string, 0, len(pages))
	for _, p := range pages {
		if p = strings.TrimSpace(p); p != "" {
			trimmed = append(trimmed, p)
		}
	}
	return strings.Join(trimmed, "\n\n")
}
