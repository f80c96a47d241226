package convert

import (
	"archive/zip"
	"fmt"
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
		n, err := io.Copy(io.Discard, io.LimitReader(rc, c.opts.MaxUncompressed-actual+1))
		rc.Close()
		actual += n
		if lerr := c.zipLimits(actual, st.Size()); lerr != nil {
			return lerr
		}
		if err != nil {
			return docflow.Errorf(docflow.EINVALID, "document container entry %q is corrupt: %v", f.Name, err)
		}
	}
	return nil
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
