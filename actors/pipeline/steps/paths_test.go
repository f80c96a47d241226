package steps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"docflow"
)

// TestLogsHaveNoServerPaths: what a step reports (its error, which the
// engine writes into the processing log) names files relative to the work
// dir, never by the server's absolute paths, whether the path comes from
// a tool's message or from the step itself.
func TestLogsHaveNoServerPaths(t *testing.T) {
	bin := t.TempDir()
	// Tools that fail the way real ones do, quoting the files they were
	// given: rsvg-convert its output, pdftotext its input.
	shims := map[string]string{
		"rsvg-convert": "#!/bin/sh\necho \"rsvg-convert: cannot write to ${2#--output=}\" >&2\nexit 1\n",
		"pdftotext":    "#!/bin/sh\necho \"Syntax Error: Couldn't open file '$3'\" >&2\nexit 1\n",
	}
	for name, script := range shims {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	fx := newFixture(t, nil)

	svg := filepath.Join(t.TempDir(), "drawing.svg")
	os.WriteFile(svg, []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`), 0o644)
	_, convErr := fx.run(docflow.StepConvertToPDF, fx.file(svg, "image/svg+xml"), nil, nil)

	s := sharedCorpus(t).Get("invoice.pdf")
	_, ocrErr := fx.run(docflow.StepOCR, fx.file(s.Path, s.MimeType), nil, nil)

	for _, c := range []struct {
		err  error
		want string
	}{{convErr, "tmp/docflow-svg-"}, {ocrErr, "'blobs/"}} {
		if c.err == nil {
			t.Fatal("the failing tool did not fail the step")
		}
		for _, msg := range []string{c.err.Error(), docflow.ErrorMessage(c.err)} {
			t.Log(msg)
			if strings.Contains(msg, fx.dir) || !strings.Contains(msg, c.want) {
				t.Errorf("message %q: want %q relative to the work dir, no %q", msg, c.want, fx.dir)
			}
		}
		if docflow.ErrorCode(c.err) != docflow.EINVALID {
			t.Errorf("code %s: the rewrite lost the error's code", docflow.ErrorCode(c.err))
		}
	}
}
