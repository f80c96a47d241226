package convert

import (
	"archive/zip"
	"bufio"
	"bytes"
	"fmt"
	"image"
	"io"
	"os"

	"docflow"
)

// checkZip refuses ZIP bombs before LibreOffice inflates them. The declared
// sizes are checked first (cheap, catches honest bombs); then every entry
// is inflated into io.Discard with a cap, because a hostile archive can
// declare small sizes and still expand.
func (c *Converter) checkZip(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("zip check: %w", err)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return docflow.Errorf(docflow.EINVALID, "document container is not a valid ZIP archive: %v", err)
	}
	defer zr.Close()
	if len(zr.File) > c.opts.MaxZipEntries {
		return docflow.Errorf(docflow.EINVALID, "document container has %d entries, more than the limit %d", len(zr.File), c.opts.MaxZipEntries)
	}
	var declared uint64
	for _, f := range zr.File {
		declared += f.UncompressedSize64
	}
	if err := c.zipLimits(int64(min(declared, 1<<62)), st.Size()); err != nil {
		return err
	}
	var actual int64
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return docflow.Errorf(docflow.EINVALID, "document container entry %q: %v", f.Name, err)
		}
		cr := &countingReader{r: io.LimitReader(rc, c.opts.MaxUncompressed-actual+1)}
		br := bufio.NewReader(cr)
		imgErr := c.checkEntryImage(f.Name, br)
		_, err = io.Copy(io.Discard, br)
		rc.Close()
		actual += cr.n
		if lerr := c.zipLimits(actual, st.Size()); lerr != nil {
			return lerr
		}
		if imgErr != nil {
			return imgErr
		}
		if err != nil {
			return docflow.Errorf(docflow.EINVALID, "document container entry %q is corrupt: %v", f.Name, err)
		}
	}
	return nil
}

// checkEntryImage holds a picture inside an office document to the pixel
// limit of image uploads: LibreOffice decodes every picture whole (a
// 15000² PNG of 500 KB took it 855 MB). Only the header is read, from r,
// which the caller then reads on; an entry is known for a picture by its
// content, not its name. A header that cannot be read is left to
// LibreOffice, under the tools' memory limit.
func (c *Converter) checkEntryImage(name string, r *bufio.Reader) error {
	head, _ := r.Peek(12)
	var src io.Reader = r
	switch {
	case isTIFFHeader(head):
		// NOTE: the TIFF reader keeps everything up to the first
		// directory in memory, which a writer may put at the end.
		src = io.LimitReader(r, maxTIFFHeader)
	case !isImageHeader(head):
		return nil
	}
	cfg, format, err := image.DecodeConfig(src)
	if err != nil {
		return nil
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > c.opts.MaxPixels {
		return docflow.Errorf(docflow.EINVALID, "document contains a picture (%s, %s) of %d×%d = %d pixels, more than the limit of %d (decompression bomb?)",
			name, format, cfg.Width, cfg.Height, px, c.opts.MaxPixels)
	}
	return nil
}

// maxTIFFHeader bounds what is read of a TIFF picture to find its size.
const maxTIFFHeader = 16 << 20

func isTIFFHeader(b []byte) bool {
	return bytes.HasPrefix(b, []byte("II*\x00")) || bytes.HasPrefix(b, []byte("MM\x00*"))
}

// isImageHeader tells the other raster formats image.DecodeConfig reads
// here (PNG, JPEG, GIF, BMP, WebP) by their first bytes.
func isImageHeader(b []byte) bool {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")),
		bytes.HasPrefix(b, []byte{0xFF, 0xD8, 0xFF}),
		bytes.HasPrefix(b, []byte("GIF8")),
		bytes.HasPrefix(b, []byte("BM")),
		len(b) >= 12 && bytes.HasPrefix(b, []byte("RIFF")) && string(b[8:12]) == "WEBP":
		return true
	}
	return false
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *Converter) zipLimits(uncompressed, size int64) error {
	if uncompressed > c.opts.MaxUncompressed {
		return docflow.Errorf(docflow.EINVALID, "document container inflates to %d bytes, more than the limit %d (ZIP bomb?)", uncompressed, c.opts.MaxUncompressed)
	}
	// Small files may compress very well (an empty sheet); the ratio only
	// matters once the inflated size is large enough to hurt.
	if uncompressed > 16<<20 && size > 0 && float64(uncompressed)/float64(size) > c.opts.MaxRatio {
		return docflow.Errorf(docflow.EINVALID, "document container inflates %.0f times its size, more than the limit %.0f (ZIP bomb?)", float64(uncompressed)/float64(size), c.opts.MaxRatio)
	}
	return nil
}
