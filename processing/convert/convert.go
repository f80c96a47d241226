// Package convert turns every supported upload type into a PDF: office and
// text formats through LibreOffice headless, raster images one page per
// frame at the size their resolution gives (a PNG's compressed data goes
// into the PDF as it is, in process; other images through img2pdf), SVG
// through librsvg, and PDFs are validated and passed through.
//
// Hostile input is refused before any tool sees it: images whose header
// declares more than MaxPixels pixels, ZIP containers (DOCX, XLSX, PPTX)
// that inflate beyond MaxUncompressed or by more than MaxRatio, and PDFs
// that are corrupt, encrypted or empty. Such errors carry docflow.EINVALID;
// a missing tool carries EUNAVAILABLE and a timeout ETIMEOUT.
package convert

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"docflow"
	"docflow/internal/proc"
)

// Options configure a Converter. Zero values take the defaults.
type Options struct {
	// LibreOffice is the soffice binary (default: soffice, else
	// libreoffice, on PATH).
	LibreOffice string
	// ProfileRoot holds one LibreOffice user profile per concurrent
	// conversion (default: a fresh directory under TempDir). LibreOffice
	// refuses to run twice on one profile, so each slot has its own.
	ProfileRoot string
	// MaxConcurrent bounds simultaneous LibreOffice conversions (default
	// half the CPUs, at least 1): each instance takes ~200 MB.
	MaxConcurrent int
	// OfficeTimeout bounds one LibreOffice conversion (default 120 s);
	// on expiry the whole process group is killed.
	OfficeTimeout time.Duration
	// ToolTimeout bounds img2pdf, rsvg-convert and pdfinfo (default 60 s).
	ToolTimeout time.Duration
	// MaxPixels refuses images with more pixels per frame (default
	// 178956970, Pillow's limit).
	MaxPixels int64
	// MaxFrames refuses images with more frames/pages (default 2000).
	MaxFrames int
	// MaxUncompressed refuses ZIP containers that inflate to more bytes
	// (default 512 MiB).
	MaxUncompressed int64
	// MaxRatio refuses ZIP containers whose uncompressed size exceeds the
	// file size by more than this factor once above 16 MiB (default 100).
	MaxRatio float64
	// MaxZipEntries refuses ZIP containers with more entries (default 10000).
	MaxZipEntries int
	// TempDir holds working files (default os.TempDir()).
	TempDir string
}

// Default limits.
const (
	DefaultMaxPixels       = 178956970
	DefaultMaxFrames       = 2000
	DefaultMaxUncompressed = 512 << 20
	DefaultMaxRatio        = 100
	DefaultMaxZipEntries   = 10000
	DefaultOfficeTimeout   = 120 * time.Second
	DefaultToolTimeout     = 60 * time.Second
)

// Converter converts files to PDF. It is safe for concurrent use; Close
// removes its LibreOffice profiles.
type Converter struct {
	opts        Options
	slots       chan int // free LibreOffice profile slots
	ownsProfile bool

	mu     sync.Mutex
	closed bool
}

// New returns a Converter. It does not require the tools to be installed:
// a missing tool fails the conversion that needs it, naming the package.
func New(opts Options) (*Converter, error) {
	if opts.TempDir == "" {
		opts.TempDir = os.TempDir()
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if opts.OfficeTimeout <= 0 {
		opts.OfficeTimeout = DefaultOfficeTimeout
	}
	if opts.ToolTimeout <= 0 {
		opts.ToolTimeout = DefaultToolTimeout
	}
	if opts.MaxPixels <= 0 {
		opts.MaxPixels = DefaultMaxPixels
	}
	if opts.MaxFrames <= 0 {
		opts.MaxFrames = DefaultMaxFrames
	}
	if opts.MaxUncompressed <= 0 {
		opts.MaxUncompressed = DefaultMaxUncompressed
	}
	if opts.MaxRatio <= 0 {
		opts.MaxRatio = DefaultMaxRatio
	}
	if opts.MaxZipEntries <= 0 {
		opts.MaxZipEntries = DefaultMaxZipEntries
	}
	c := &Converter{opts: opts, slots: make(chan int, opts.MaxConcurrent)}
	if c.opts.ProfileRoot == "" {
		dir, err := os.MkdirTemp(opts.TempDir, "docflow-lo-")
		if err != nil {
			return nil, fmt.Errorf("libreoffice profile root: %w", err)
		}
		c.opts.ProfileRoot = dir
		c.ownsProfile = true
	}
	for i := 0; i < opts.MaxConcurrent; i++ {
		c.slots <- i
	}
	return c, nil
}

// Close removes the profiles the Converter created. Conversions still
// running are not waited for.
func (c *Converter) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.ownsProfile {
		return os.RemoveAll(c.opts.ProfileRoot)
	}
	return nil
}

// Convert writes a PDF version of in to out. mimeType is the declared type
// (may be empty); the content is sniffed and wins where it is specific.
// Returns EINVALID for unsupported or hostile input.
func (c *Converter) Convert(ctx context.Context, in, mimeType, out string) error {
	sniffed, err := DetectType(in)
	if err != nil {
		return err
	}
	mt, info, err := resolveType(mimeType, sniffed)
	if err != nil {
		return err
	}
	switch info.kind {
	case KindPDF:
		if _, err := c.CheckPDF(ctx, in); err != nil {
			return err
		}
		return copyFile(in, out)
	case KindOffice:
		return c.office(ctx, in, info, out)
	case KindImage:
		return c.image(ctx, in, mt, out)
	case KindSVG:
		return c.svg(ctx, in, out)
	}
	return unsupported(mimeType, sniffed)
}

func unsupported(declared, sniffed string) error {
	t := sniffed
	if t == "" || t == "application/octet-stream" {
		t = declared
	}
	return docflow.Errorf(docflow.EINVALID, "unsupported file type %q: supported types are PDF, DOC, DOCX, XLS, XLSX, PPT, PPTX, TXT, CSV, RTF, JPG, PNG, GIF, BMP, TIFF, WebP, SVG", t)
}

// workDir makes a private temporary directory for one conversion.
func (c *Converter) workDir(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp(c.opts.TempDir, "docflow-"+prefix+"-")
	if err != nil {
		return "", nil, fmt.Errorf("work dir: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// svg converts through rsvg-convert from a private copy, so relative
// references in the SVG cannot reach files beside the original.
func (c *Converter) svg(ctx context.Context, in, out string) error {
	bin, err := proc.Look("rsvg-convert")
	if err != nil {
		return err
	}
	dir, cleanup, err := c.workDir("svg")
	if err != nil {
		return err
	}
	defer cleanup()
	src := filepath.Join(dir, "in.svg")
	if err := copyFile(in, src); err != nil {
		return err
	}
	dst := filepath.Join(dir, "out.pdf")
	if _, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"--format=pdf", "--output=" + dst, src}, Dir: dir, Timeout: c.opts.ToolTimeout}); err != nil {
		return invalidIfFailed(fmt.Errorf("svg to pdf: %w", err))
	}
	return moveFile(dst, out)
}

// invalidIfFailed marks a tool's refusal of the input as EINVALID, keeping
// timeouts and missing tools as they are.
func invalidIfFailed(err error) error {
	switch docflow.ErrorCode(err) {
	case docflow.ETIMEOUT, docflow.EUNAVAILABLE:
		return err
	}
	if strings.Contains(err.Error(), "context canceled") {
		return err
	}
	return &docflow.Error{Code: docflow.EINVALID, Message: err.Error()}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer in.Close()
	tmp := dst + ".part"
	out, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return fmt.Errorf("copy: %w", err)
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("copy: %w", err)
	}
	return os.Rename(tmp, dst)
}

// moveFile renames, falling back to a copy across file systems.
func moveFile(src, dst string) error {
	if err := os.Rename(src, dst); err == nil {
		return nil
	}
	if err := copyFile(src, dst); err != nil {
		return err
	}
	return os.Remove(src)
}
