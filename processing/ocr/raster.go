package ocr

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"docflow"
	"docflow/internal/proc"
)

// Defaults of the page raster bound.
const (
	// DefaultMaxPagePixels bounds the image of one page handed to
	// Tesseract: 64 Mi pixels, an A0 page at 200 dpi. Tesseract takes 4 to
	// 15 bytes per pixel, pdftoppm 2: within the tools' default 1 GiB.
	DefaultMaxPagePixels = 64 << 20
	// DefaultMinDPI is the lowest resolution a page is rasterised at to
	// fit the bound: below it Tesseract reads body text poorly.
	DefaultMinDPI = 150
)

// rasterDPI returns the resolution a page of size (points) is rasterised
// at: Options.DPI, or the highest lower one whose raster fits
// MaxPagePixels. A page that does not fit even at MinDPI is EINVALID,
// with a message giving its size.
func (e *Engine) rasterDPI(page int, size [2]float64) (int, error) {
	w, h := size[0], size[1]
	if !(w > 0 && h > 0) || math.IsInf(w*h, 0) {
		return 0, docflow.Errorf(docflow.EINVALID, "page %d has no usable size (%g × %g pt)", page, w, h)
	}
	pixels := func(dpi int) float64 {
		return math.Ceil(w*float64(dpi)/72) * math.Ceil(h*float64(dpi)/72)
	}
	dpi := e.opts.DPI
	if pixels(dpi) > float64(e.opts.MaxPagePixels) {
		dpi = int(72 * math.Sqrt(float64(e.opts.MaxPagePixels)/(w*h)))
		for dpi > 0 && pixels(dpi) > float64(e.opts.MaxPagePixels) {
			dpi-- // the rounding up of each side
		}
	}
	if dpi < min(e.opts.MinDPI, e.opts.DPI) {
		low := min(e.opts.MinDPI, e.opts.DPI)
		return 0, docflow.Errorf(docflow.EINVALID,
			"page %d is too large to read: %.0f × %.0f pt (%.0f × %.0f cm) would be %.0f × %.0f pixels even at %d dpi, more than the limit of %.1f million pixels per page",
			page, w, h, w/72*2.54, h/72*2.54, math.Ceil(w*float64(low)/72), math.Ceil(h*float64(low)/72), low, float64(e.opts.MaxPagePixels)/1e6)
	}
	return dpi, nil
}

// pageSizes reads the MediaBox (what pdftoppm renders) of pages first to
// last, in points, with one pdfinfo run.
func (e *Engine) pageSizes(ctx context.Context, pdf string, first, last int) (map[int][2]float64, error) {
	bin, err := proc.Look("pdfinfo")
	if err != nil {
		return nil, err
	}
	res, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"-box", "-f", strconv.Itoa(first), "-l", strconv.Itoa(last), pdf}, Timeout: e.opts.DocTimeout})
	if err != nil {
		return nil, fmt.Errorf("page sizes: %w", err)
	}
	sizes := map[int][2]float64{}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		// "Page    1 MediaBox:      0.00     0.00   595.00   842.00"
		f := strings.Fields(sc.Text())
		if len(f) != 7 || f[0] != "Page" || f[2] != "MediaBox:" {
			continue
		}
		p, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		var box [4]float64
		for i := range box {
			box[i], err = strconv.ParseFloat(f[3+i], 64)
			if err != nil {
				break
			}
		}
		if err == nil {
			sizes[p] = [2]float64{math.Abs(box[2] - box[0]), math.Abs(box[3] - box[1])}
		}
	}
	return sizes, nil
}

// rasterPlan gives the resolution of each page of a document that is
// rasterised, reading the page sizes once, when first needed.
type rasterPlan struct {
	e           *Engine
	pdf         string
	first, last int

	once  sync.Once
	sizes map[int][2]float64
	err   error
}

func (e *Engine) newRasterPlan(pdf string, need []int) *rasterPlan {
	p := &rasterPlan{e: e, pdf: pdf}
	if len(need) > 0 {
		p.first, p.last = need[0], need[0]
		for _, n := range need {
			p.first, p.last = min(p.first, n), max(p.last, n)
		}
	}
	return p
}

// dpi returns the resolution page is rasterised at (see rasterDPI).
func (p *rasterPlan) dpi(ctx context.Context, page int) (int, error) {
	p.once.Do(func() { p.sizes, p.err = p.e.pageSizes(ctx, p.pdf, p.first, p.last) })
	if p.err != nil {
		return 0, p.err
	}
	size, ok := p.sizes[page]
	if !ok {
		return 0, fmt.Errorf("page sizes: pdfinfo gave no MediaBox for page %d", page)
	}
	return p.e.rasterDPI(page, size)
}

// check fails at once when one of pages cannot be rasterised within the
// bound, before any page is read.
func (p *rasterPlan) check(ctx context.Context, pages []int) error {
	for _, n := range pages {
		if _, err := p.dpi(ctx, n); err != nil {
			return err
		}
	}
	return nil
}
