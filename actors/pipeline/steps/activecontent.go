package steps

import (
	"context"
	"fmt"
	"os"

	"docflow/processing/pdfsafe"
)

// withoutActiveContent makes sure the PDF at path, which is about to become
// the processed version, carries no active content (processing/pdfsafe):
// with active (what convert.CheckPDF found) empty it returns path as it
// is; otherwise it writes a cleaned copy to out and returns out. note says
// what went, for the step's message ("" for nothing).
func withoutActiveContent(ctx context.Context, path, out string, active pdfsafe.Removed) (string, string, error) {
	if len(active) == 0 {
		return path, "", nil
	}
	removed, err := pdfsafe.Rewrite(ctx, path, out, toolTimeout)
	if err != nil {
		os.Remove(out)
		return "", "", fmt.Errorf("remove active content: %w", err)
	}
	if len(removed) == 0 {
		removed = active
	}
	return out, "; active content removed: " + removed.String(), nil
}
