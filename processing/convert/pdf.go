package convert

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"docflow"
	"docflow/internal/proc"
	"docflow/processing/pdfconf"
	"docflow/processing/pdfsafe"
)

// PDFInfo is what CheckPDF learned about a PDF.
type PDFInfo struct {
	Pages     int
	Encrypted bool // encrypted without a user password (opens freely)
	// Active is the active content found (scripts, actions that run or
	// open something, see processing/pdfsafe): empty when there is none.
	// For a PDF only poppler reads, poppler only tells JavaScript.
	Active pdfsafe.Removed
}

// CheckPDF validates a PDF: EINVALID for a file that is not a PDF, is
// corrupt, needs a password or has no pages.
//
// pdfcpu reads and validates it in-process (well under a millisecond for
// a typical document); only a PDF that pdfcpu refuses goes to poppler's
// pdfinfo, the library that later reads it, which then decides and words
// the error. So a born-digital PDF costs no process, and a PDF that only
// poppler can read still passes.
func (c *Converter) CheckPDF(ctx context.Context, path string) (*PDFInfo, error) {
	return CheckPDF(ctx, path, c.opts.ToolTimeout)
}

// CheckPDF is Converter.CheckPDF without a Converter.
func CheckPDF(ctx context.Context, path string, timeout time.Duration) (*PDFInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("check pdf: %w", err)
	}
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	f.Close()
	if !bytes.Contains(head[:n], []byte("%PDF-")) {
		return nil, docflow.Errorf(docflow.EINVALID, "not a PDF file: the %%PDF header is missing")
	}
	if info, ok := checkInProcess(path); ok {
		return info, nil
	}
	return checkPoppler(ctx, path, timeout)
}

// checkInProcess validates with pdfcpu (relaxed mode, as embed_metadata
// reads); ok is false when pdfcpu refuses the file or finds no pages, and
// poppler should have the last word.
func checkInProcess(path string) (info *PDFInfo, ok bool) {
	// NOTE: hostile input must not crash the worker: a panic in the
	// parser sends the file to poppler like any refusal.
	defer func() {
		if recover() != nil {
			info, ok = nil, false
		}
	}()
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	conf := pdfconf.New()
	conf.ValidationMode = model.ValidationRelaxed
	ctx, err := api.ReadAndValidate(f, conf)
	if err != nil || ctx == nil || ctx.PageCount <= 0 {
		return nil, false
	}
	// Cleaning the throwaway model is how active content is found.
	return &PDFInfo{Pages: ctx.PageCount, Encrypted: ctx.Encrypt != nil, Active: pdfsafe.Clean(ctx)}, true
}

// checkPoppler is CheckPDF through pdfinfo.
func checkPoppler(ctx context.Context, path string, timeout time.Duration) (*PDFInfo, error) {
	bin, err := proc.Look("pdfinfo")
	if err != nil {
		return nil, err
	}
	res, runErr := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{path}, Timeout: timeout})
	stderr := ""
	if res != nil {
		stderr = res.Stderr
	}
	switch code := docflow.ErrorCode(runErr); {
	case code == docflow.ETIMEOUT || code == docflow.EUNAVAILABLE:
		return nil, runErr
	case strings.Contains(stderr, "Incorrect password"):
		return nil, docflow.Errorf(docflow.EINVALID, "PDF is encrypted with a password: remove the password and upload it again")
	case strings.Contains(stderr, "Invalid page count 0"):
		return nil, docflow.Errorf(docflow.EINVALID, "PDF has no pages")
	case runErr != nil:
		if ctx.Err() != nil {
			return nil, runErr
		}
		return nil, docflow.Errorf(docflow.EINVALID, "PDF is corrupt or unreadable: %s", firstLine(stderr))
	}
	info := &PDFInfo{Pages: -1}
	sc := bufio.NewScanner(bytes.NewReader(res.Stdout))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Pages":
			info.Pages, _ = strconv.Atoi(v)
		case "Encrypted":
			info.Encrypted = strings.HasPrefix(v, "yes")
		case "JavaScript":
			if strings.HasPrefix(v, "yes") {
				info.Active = pdfsafe.Removed{"JavaScript": 1}
			}
		}
	}
	switch {
	case info.Pages == 0:
		return nil, docflow.Errorf(docflow.EINVALID, "PDF has no pages")
	case info.Pages < 0:
		return nil, docflow.Errorf(docflow.EINVALID, "PDF is corrupt or unreadable: %s", firstLine(stderr))
	}
	return info, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return "no page count"
	}
	return s
}
