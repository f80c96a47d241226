package convert

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"docflow"
	"docflow/internal/proc"
)

// office converts through LibreOffice headless. Each conversion takes a
// profile slot (bounding concurrency) and runs from a private directory
// holding a copy of the input with the extension LibreOffice needs: blobs
// are stored without one.
func (c *Converter) office(ctx context.Context, in string, info typeInfo, out string) error {
	if info.zip {
		if err := c.checkZip(in); err != nil {
			return err
		}
	}
	bin, err := c.soffice()
	if err != nil {
		return err
	}
	var slot int
	select {
	case slot = <-c.slots:
	case <-ctx.Done():
		return fmt.Errorf("wait for a libreoffice slot: %w", ctx.Err())
	}
	defer func() { c.slots <- slot }()

	dir, cleanup, err := c.workDir("office")
	if err != nil {
		return err
	}
	defer cleanup()
	src := filepath.Join(dir, "document."+info.ext)
	if err := copyFile(in, src); err != nil {
		return err
	}
	profile := filepath.Join(c.opts.ProfileRoot, fmt.Sprintf("slot%d", slot))
	args := []string{"--headless", "--invisible", "--nologo", "--nodefault", "--nolockcheck", "--norestore",
		"--nofirststartwizard", "-env:UserInstallation=file://" + profile}
	switch info.ext {
	case "csv":
		// Comma-separated, double quotes, UTF-8 (76), from line 1: without
		// a filter LibreOffice guesses, and guesses differ between versions.
		args = append(args, "--infilter=CSV:44,34,76,1")
	case "txt":
		args = append(args, "--infilter=Text (encoded):UTF8")
	}
	outDir := filepath.Join(dir, "out")
	args = append(args, "--convert-to", "pdf", "--outdir", outDir, src)
	_, err = proc.Run(ctx, proc.Cmd{Path: bin, Args: args, Dir: dir, Timeout: c.opts.OfficeTimeout,
		// LibreOffice writes into HOME when it cannot use the profile.
		Env: []string{"HOME=" + dir}})
	if err != nil {
		// NOTE: a killed instance can leave a half-written profile that
		// makes the next start hang or fail; start the slot afresh.
		if docflow.ErrorCode(err) == docflow.ETIMEOUT || ctx.Err() != nil {
			os.RemoveAll(profile)
		}
		return invalidIfFailed(fmt.Errorf("libreoffice convert %s: %w", info.ext, err))
	}
	pdf := filepath.Join(outDir, "document.pdf")
	if _, err := os.Stat(pdf); err != nil {
		// soffice exits 0 even when the import filter rejected the file.
		return docflow.Errorf(docflow.EINVALID, "libreoffice could not convert the %s document (unreadable or damaged)", info.ext)
	}
	return moveFile(pdf, out)
}

func (c *Converter) soffice() (string, error) {
	if c.opts.LibreOffice != "" {
		return proc.Look(c.opts.LibreOffice)
	}
	if p, err := proc.Look("soffice"); err == nil {
		return p, nil
	}
	if p, err := proc.Look("libreoffice"); err == nil {
		return p, nil
	}
	return "", docflow.Errorf(docflow.EUNAVAILABLE, "libreoffice not found on PATH: install libreoffice-writer-nogui (and -calc-nogui, -impress-nogui)")
}
