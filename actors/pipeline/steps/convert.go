package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"docflow"
	"docflow/processing/convert"
)

// convertStep is convert_to_pdf: every supported type becomes a PDF stored
// beside the original.
type convertStep struct {
	d Deps
	// One Converter per (timeout, concurrency) setting pair: a changed
	// setting takes effect on the next document while conversions already
	// running keep their converter and its profiles.
	converters onceMap[convKey, *convert.Converter]
}

type convKey struct {
	timeout     time.Duration
	concurrency int
}

var _ docflow.Step = (*convertStep)(nil)

func (s *convertStep) Type() string { return docflow.StepConvertToPDF }

func (s *convertStep) converter() (*convert.Converter, error) {
	k := convKey{
		timeout:     max(time.Second, docflow.LibreOfficeTimeout.Get(s.d.Settings)),
		concurrency: max(1, docflow.ConvertConcurrency.Get(s.d.Settings)),
	}
	return s.converters.get(k, func() (*convert.Converter, error) {
		return convert.New(convert.Options{
			OfficeTimeout: k.timeout,
			MaxConcurrent: k.concurrency,
			TempDir:       s.d.TempDir,
		})
	})
}

func (s *convertStep) close() error {
	var first error
	s.converters.each(func(c *convert.Converter) {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	})
	return first
}

func (s *convertStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	toolMemoryLimit(s.d.Settings)
	f := in.File
	if f.OriginalBlob == "" {
		return nil, invalidf("file %d has no stored original", f.ID)
	}
	src, err := in.Blobs.Path(ctx, f.OriginalBlob)
	if err != nil {
		return nil, fmt.Errorf("open original: %w", err)
	}
	c, err := s.converter()
	if err != nil {
		return nil, err
	}
	var info *convert.PDFInfo
	out, what := src, "PDF rewritten"
	if convert.KindOf(f.MimeType) == convert.KindPDF {
		if info, err = c.CheckPDF(ctx, src); err != nil {
			return nil, err
		}
		if len(info.Active) == 0 {
			// A valid PDF is its own processed version (blobs are
			// content-addressed, so a copy would have the same key).
			f.ProcessedBlob = f.OriginalBlob
			return &docflow.StepResult{Message: fmt.Sprintf("PDF passed through (%d pages)", info.Pages), Bytes: f.FileSize}, nil
		}
	}
	dir, cleanup, err := workDir(s.d, "convert")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if info == nil {
		out = filepath.Join(dir, "out.pdf")
		if err := c.Convert(ctx, src, f.MimeType, out); err != nil {
			return nil, err
		}
		if info, err = c.CheckPDF(ctx, out); err != nil {
			return nil, fmt.Errorf("converted PDF: %w", err)
		}
		what = fmt.Sprintf("Converted %s (%s) to PDF", f.MimeType, convert.KindOf(f.MimeType))
	}
	// NOTE: LibreOffice writes form fields with scripts, and an uploaded
	// PDF may carry anything: the processed version has none of it.
	out, note, err := withoutActiveContent(ctx, out, filepath.Join(dir, "clean.pdf"), info.Active)
	if err != nil {
		return nil, err
	}
	blob, err := putFile(ctx, in.Blobs, out)
	if err != nil {
		return nil, err
	}
	f.ProcessedBlob = blob.Key
	return &docflow.StepResult{
		Message: fmt.Sprintf("%s: %d pages, %d bytes%s", what, info.Pages, blob.Size, note),
		Bytes:   f.FileSize,
	}, nil
}
