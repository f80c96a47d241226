package legacytest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The original's work folder for the seed's files, as the original lays
// it out under its WORKDIR (/workdir): original/<uuid>.<ext>, the
// immutable originals; processed/<date>_<name>.pdf, the processed
// versions; tmp/, working copies it removed after processing. The seed
// records these paths; WriteWorkFolder writes the files that exist.
//
//   - file 1, invoice.pdf: its original and its processed version exist
//     (its working copy in tmp/ was removed);
//   - file 2, letter.txt: its original exists, it has no processed
//     version;
//   - file 3, a duplicate of file 1: its working copy is gone, its
//     content is file 1's;
//   - file 4, scan.png: nothing of it is on disk;
//   - file 5, notes.txt: its paths leave the work folder (../../etc/passwd,
//     /etc/passwd, and ../secret.txt, which WriteWorkFolder writes next to
//     the folder so that reading it would succeed).
const (
	InvoiceOriginalPath  = "/workdir/original/0b6c2f2e-8a53-4c3e-9d38-4f3f8d1c2a10.pdf"
	InvoiceProcessedPath = "/workdir/processed/2025-03-01_ACME_Invoice.pdf"
	LetterOriginalPath   = "/workdir/original/5d1e0c3a-77b2-4f0e-a7c4-0e6b1f2d9a31.txt"
	ScanOriginalPath     = "/workdir/original/9a8b7c6d-1111-4222-8333-944455556666.png"
	TraversalPath        = "../../etc/passwd"
	OutsidePath          = "/etc/passwd"
	SiblingPath          = "../secret.txt"
)

// InvoicePDF is invoice.pdf as it was uploaded; InvoiceProcessedPDF its
// processed version; LetterText letter.txt.
var (
	InvoicePDF          = pdf("Invoice 42 from ACME")
	InvoiceProcessedPDF = pdf("Invoice 42 from ACME (processed, with its metadata)")
	LetterText          = []byte("Dear Bob,\nthe letter you asked for.\nRegards, Alice\n")
	// secretText is what lies next to the work folder: never imported.
	secretText = []byte("not for the import\n")
)

// Hash is the hex SHA-256 the original records for content.
func Hash(content []byte) string {
	s := sha256.Sum256(content)
	return hex.EncodeToString(s[:])
}

// WriteWorkFolder writes the seed's files that exist into dir (the
// original's WORKDIR as this machine sees it), and a file next to dir
// that a path climbing out of it would reach.
func WriteWorkFolder(dir string) error {
	files := map[string][]byte{
		InvoiceOriginalPath:  InvoicePDF,
		InvoiceProcessedPath: InvoiceProcessedPDF,
		LetterOriginalPath:   LetterText,
	}
	for recorded, content := range files {
		p := filepath.Join(dir, strings.TrimPrefix(recorded, "/workdir/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(filepath.Dir(filepath.Clean(dir)), "secret.txt"), secretText, 0o644)
}

// pdf is a one-page PDF showing text, with a correct cross-reference
// table (viewers open it as it is).
func pdf(text string) []byte {
	stream := fmt.Sprintf("BT /F1 18 Tf 72 720 Td (%s) Tj ET", text)
	objects := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return []byte(b.String())
}
