package ocr

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"docflow/internal/proc"
	"docflow/processing/quality"
)

// pageResult is one OCR'd page.
type pageResult struct {
	text    string
	confSum float64
	confN   int
}

// tesseract OCRs the pages in need, in parallel, and assembles the text and
// (when asked) the searchable PDF.
func (e *Engine) tesseract(ctx context.Context, pdf, lang string, pages []string, need []int, req Request, res *Result) (*Result, error) {
	tess, err := proc.Look(e.opts.Tesseract)
	if err != nil {
		return nil, err
	}
	imgs := e.pageImages(ctx, pdf, len(pages), need)
	plan := e.newRasterPlan(pdf, need)
	if len(imgs) < len(need) {
		// Some pages are rasterised: a missing pdftoppm, or a page too
		// large to render, fails the document before any OCR runs.
		if _, err := proc.Look("pdftoppm"); err != nil {
			return nil, err
		}
		var raster []int
		for _, p := range need {
			if imgs[p] == nil {
				raster = append(raster, p)
			}
		}
		if err := plan.check(ctx, raster); err != nil {
			return nil, err
		}
	}
	dir, cleanup, err := e.workDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()

	var extracted atomic.Int64
	wantPDF := req.Searchable != ""
	err = e.readPages(ctx, pages, need, res, func(ctx context.Context, page int) (*pageResult, error) {
		ctx, cancel := context.WithTimeout(ctx, e.opts.PageTimeout)
		defer cancel()
		if img := imgs[page]; img != nil {
			r, err := e.readPageImage(ctx, tess, pdf, dir, lang, page, img, wantPDF)
			if err == nil {
				extracted.Add(1)
				return r, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			// NOTE: an image that passed inspection can still be one
			// that Tesseract's reader refuses (a bad zlib checksum, say):
			// the page is then rasterised like any other.
		}
		ppm, err := proc.Look("pdftoppm")
		if err != nil {
			return nil, err
		}
		dpi, err := plan.dpi(ctx, page)
		if err != nil {
			return nil, err
		}
		return e.ocrPage(ctx, ppm, tess, pdf, dir, lang, page, dpi, wantPDF)
	})
	if err != nil {
		return nil, err
	}
	res.ExtractedPages = int(extracted.Load())
	if req.Searchable != "" {
		if err := e.assemble(ctx, pdf, dir, len(pages), need, req.Searchable); err != nil {
			return nil, err
		}
		res.Searchable = true
	}
	return res, nil
}

// readPages reads the pages in need with read, in parallel under the
// Engine's bound, puts their text into pages and fills res with the text,
// the mean word confidence and the quality score.
func (e *Engine) readPages(ctx context.Context, pages []string, need []int, res *Result, read func(context.Context, int) (*pageResult, error)) error {
	results := make(map[int]*pageResult, len(need))
	var mu sync.Mutex
	err := e.forEachPage(ctx, need, func(ctx context.Context, page int) error {
		r, err := read(ctx, page)
		if err != nil {
			return fmt.Errorf("ocr page %d: %w", page, err)
		}
		mu.Lock()
		results[page] = r
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}

	var confSum float64
	var confN int
	for _, p := range need {
		r := results[p]
		pages[p-1] = r.text
		confSum += r.confSum
		confN += r.confN
	}
	if confN > 0 {
		res.MeanConfidence = confSum / float64(confN)
	}
	res.Engine = RendererTesseract
	res.Text = joinPages(pages)
	res.Quality = quality.Score(res.Text, res.MeanConfidence)
	return nil
}

// forEachPage runs fn for every page, at most Parallelism at a time across
// the Engine, and stops at the first error (the others are cancelled).
func (e *Engine) forEachPage(ctx context.Context, pages []int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	workers := min(e.opts.Parallelism, len(pages))
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				// The Engine-wide semaphore bounds Tesseract processes
				// across concurrent documents, not only within this one.
				select {
				case e.sem <- struct{}{}:
				case <-ctx.Done():
					continue
				}
				err := fn(ctx, p)
				<-e.sem
				if err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, p := range pages {
		select {
		case work <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// readPageImage copies a page's own image out of the PDF and reads it with
// Tesseract at the image's resolution on the page, so that Tesseract's
// page PDF has the original page's size.
func (e *Engine) readPageImage(ctx context.Context, tess, pdf, dir, lang string, page int, img *pageImage, wantPDF bool) (*pageResult, error) {
	path := pagePath(dir, "img", page) + img.ext
	if err := img.write(pdf, path); err != nil {
		return nil, err
	}
	defer os.Remove(path)
	return readImage(ctx, tess, path, pagePath(dir, "ocr", page), lang, img.dpi, wantPDF, pageImageParams...)
}

// pageImageParams are the Tesseract settings for a page read from its own
// image (a page of a PDF that is one image): Leptonica's tiled Otsu
// thresholding, keeping the middle of the thresholds that score
// within 20 % of the best.
//
// NOTE: pdftoppm resamples a page image by a fraction of a pixel, which
// smears each isolated noise pixel into its neighbours, light enough to
// fall on the white side of Tesseract's default (global Otsu) threshold;
// the image as scanned keeps them dark, and they come back as stray marks
// in the text. On docflow-bench's noisy A4 pages (2 % noise,
// 1.5° skew) the image read with Tesseract's defaults gave 3.85 % CER
// against 0.92 % from the raster; with these settings 0.99 %. Clean
// pages read the same (0.00–0.03 %) either way, at the same CPU.
var pageImageParams = []string{"-c", "thresholding_method=1", "-c", "thresholding_score_fraction=0.2"}

// ocrPage rasterises one page at dpi and reads it with Tesseract (the
// caller bounds it with the page timeout).
func (e *Engine) ocrPage(ctx context.Context, ppm, tess, pdf, dir, lang string, page, dpi int, wantPDF bool) (*pageResult, error) {
	img := pagePath(dir, "img", page)
	n := strconv.Itoa(page)
	if _, err := proc.Run(ctx, proc.Cmd{Path: ppm, Args: []string{"-f", n, "-l", n, "-r", strconv.Itoa(dpi), "-gray", "-singlefile", pdf, img}}); err != nil {
		return nil, fmt.Errorf("rasterise: %w", err)
	}
	defer os.Remove(img + ".pgm")
	return readImage(ctx, tess, img+".pgm", pagePath(dir, "ocr", page), lang, dpi, wantPDF)
}

// readImage runs Tesseract once on an image for text, word confidences
// (TSV) and, when wanted, the page PDF at base+".pdf". dpi 0 leaves the
// resolution to the image's header; params are added to Tesseract's
// arguments.
func readImage(ctx context.Context, tess, img, base, lang string, dpi int, wantPDF bool, params ...string) (*pageResult, error) {
	args := []string{img, base, "-l", lang}
	if dpi > 0 {
		args = append(args, "--dpi", strconv.Itoa(dpi))
	}
	args = append(args, "--psm", "3", "-c", "tessedit_create_txt=1", "-c", "tessedit_create_tsv=1")
	args = append(args, params...)
	if wantPDF {
		args = append(args, "-c", "tessedit_create_pdf=1")
	}
	// NOTE: Tesseract's own OpenMP threading makes a page 5× slower on two
	// cores; parallelism comes from running pages side by side instead.
	if _, err := proc.Run(ctx, proc.Cmd{Path: tess, Args: args, Env: []string{"OMP_THREAD_LIMIT=1"}}); err != nil {
		return nil, fmt.Errorf("tesseract: %w", err)
	}
	txt, err := os.ReadFile(base + ".txt")
	if err != nil {
		return nil, fmt.Errorf("read tesseract text: %w", err)
	}
	tsv, err := os.ReadFile(base + ".tsv")
	if err != nil {
		return nil, fmt.Errorf("read tesseract tsv: %w", err)
	}
	os.Remove(base + ".txt")
	os.Remove(base + ".tsv")
	r := &pageResult{text: strings.TrimSpace(string(txt))}
	r.confSum, r.confN = tsvConfidence(tsv)
	return r, nil
}

// tsvConfidence sums the confidence of the words (level 5 rows with text)
// of a Tesseract TSV.
func tsvConfidence(tsv []byte) (float64, int) {
	var sum float64
	var n int
	sc := bufio.NewScanner(bytes.NewReader(tsv))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) < 12 || f[0] != "5" || strings.TrimSpace(f[11]) == "" {
			continue
		}
		c, err := strconv.ParseFloat(f[10], 64)
		if err != nil || c < 0 {
			continue
		}
		sum += c
		n++
	}
	return sum, n
}

// assemble builds the searchable PDF: OCR'd pages from Tesseract's page
// PDFs, text pages split from the original, joined in order by pdfunite.
func (e *Engine) assemble(ctx context.Context, pdf, dir string, pages int, need []int, out string) error {
	unite, err := proc.Look("pdfunite")
	if err != nil {
		return err
	}
	ocred := map[int]bool{}
	for _, p := range need {
		ocred[p] = true
	}
	if len(need) < pages {
		sep, err := proc.Look("pdfseparate")
		if err != nil {
			return err
		}
		if _, err := proc.Run(ctx, proc.Cmd{Path: sep, Args: []string{pdf, filepath.Join(dir, "orig-%05d.pdf")}, Timeout: e.opts.DocTimeout}); err != nil {
			return fmt.Errorf("split text pages: %w", err)
		}
	}
	args := make([]string, 0, pages+1)
	for p := 1; p <= pages; p++ {
		if ocred[p] {
			args = append(args, pagePath(dir, "ocr", p)+".pdf")
		} else {
			args = append(args, filepath.Join(dir, fmt.Sprintf("orig-%05d.pdf", p)))
		}
	}
	tmp := out + ".part"
	args = append(args, tmp)
	if pages == 1 {
		// pdfunite wants at least two inputs.
		if err := copyFile(args[0], tmp); err != nil {
			return err
		}
	} else if _, err := proc.Run(ctx, proc.Cmd{Path: unite, Args: args, Timeout: e.opts.DocTimeout}); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("join searchable pdf: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("searchable pdf: %w", err)
	}
	return nil
}

// ocrmypdf hands the document to OCRmyPDF: --skip-text leaves text pages
// alone, --sidecar returns the text of the OCR'd pages.
func (e *Engine) ocrmypdf(ctx context.Context, pdf, lang string, pages []string, need []int, req Request, res *Result) (*Result, error) {
	bin, err := proc.Look("ocrmypdf")
	if err != nil {
		return nil, err
	}
	// OCRmyPDF picks its own resolution; a page too large to render
	// within the bound even at MinDPI is refused as for Tesseract.
	if err := e.newRasterPlan(pdf, need).check(ctx, need); err != nil {
		return nil, err
	}
	dir, cleanup, err := e.workDir()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	out := filepath.Join(dir, "out.pdf")
	sidecar := filepath.Join(dir, "sidecar.txt")
	// OCRmyPDF runs its own page workers: take one slot of the Engine
	// budget (waiting if needed) plus whatever else is free right now.
	jobs := 0
	select {
	case e.sem <- struct{}{}:
		jobs = 1
	case <-ctx.Done():
		return nil, ctx.Err()
	}
grab:
	for jobs < e.opts.Parallelism {
		select {
		case e.sem <- struct{}{}:
			jobs++
		default:
			break grab
		}
	}
	defer func() {
		for ; jobs > 0; jobs-- {
			<-e.sem
		}
	}()
	args := []string{"--skip-text", "--jobs", strconv.Itoa(jobs), "-l", lang, "--output-type", "pdf", "--optimize", "0",
		"--sidecar", sidecar, "--quiet", pdf, out}
	_, err = proc.Run(ctx, proc.Cmd{Path: bin, Args: args, Dir: dir, Env: []string{"OMP_THREAD_LIMIT=1", "TMPDIR=" + dir}, Timeout: e.opts.DocTimeout})
	if err != nil {
		return nil, fmt.Errorf("ocrmypdf: %w", err)
	}
	side, err := os.ReadFile(sidecar)
	if err != nil {
		return nil, fmt.Errorf("ocrmypdf sidecar: %w", err)
	}
	// The sidecar has one \f-separated entry per page; skipped pages read
	// "[OCR skipped on page(s) …]", so their text layer stays in place.
	sidePages := strings.Split(string(side), "\f")
	for _, p := range need {
		if p-1 < len(sidePages) {
			pages[p-1] = strings.TrimSpace(sidePages[p-1])
		}
	}
	res.Engine = RendererOCRmyPDF
	res.Text = joinPages(pages)
	res.Quality = quality.Score(res.Text, quality.NoConfidence)
	if req.Searchable != "" {
		if err := copyFile(out, req.Searchable); err != nil {
			return nil, err
		}
		res.Searchable = true
	}
	return res, nil
}
