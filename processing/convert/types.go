package convert

import (
	"fmt"
	"mime"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// Kind is the conversion route of a file type.
type Kind int

// Conversion routes.
const (
	KindUnsupported Kind = iota
	KindPDF              // validated and passed through
	KindOffice           // LibreOffice headless
	KindImage            // img2pdf, one page per frame
	KindSVG              // rsvg-convert
)

func (k Kind) String() string {
	return [...]string{"unsupported", "pdf", "office", "image", "svg"}[k]
}

// typeInfo maps a MIME type to its route and the extension LibreOffice
// needs to pick its import filter.
type typeInfo struct {
	kind Kind
	ext  string
	zip  bool // an OOXML/ODF container: checked for ZIP bombs
}

func lookupType(mt string) (typeInfo, bool) {
	switch mt {
	case "application/pdf", "application/x-pdf":
		return typeInfo{KindPDF, "pdf", false}, true
	case "application/msword":
		return typeInfo{KindOffice, "doc", false}, true
	case "application/vnd.openxmlformats-officedocument.wordprocessingml.document":
		return typeInfo{KindOffice, "docx", true}, true
	case "application/vnd.ms-excel":
		return typeInfo{KindOffice, "xls", false}, true
	case "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":
		return typeInfo{KindOffice, "xlsx", true}, true
	case "application/vnd.ms-powerpoint", "application/mspowerpoint":
		return typeInfo{KindOffice, "ppt", false}, true
	case "application/vnd.openxmlformats-officedocument.presentationml.presentation":
		return typeInfo{KindOffice, "pptx", true}, true
	case "application/rtf", "text/rtf":
		return typeInfo{KindOffice, "rtf", false}, true
	case "text/plain":
		return typeInfo{KindOffice, "txt", false}, true
	case "text/csv":
		return typeInfo{KindOffice, "csv", false}, true
	case "image/jpeg", "image/png", "image/gif", "image/bmp", "image/x-ms-bmp", "image/tiff", "image/webp":
		return typeInfo{KindImage, strings.TrimPrefix(mt, "image/"), false}, true
	case "image/svg+xml":
		return typeInfo{KindSVG, "svg", false}, true
	}
	return typeInfo{}, false
}

// SupportedTypes lists the MIME types Convert accepts: the upload types
// docflow.SupportedFileTypes names.
func SupportedTypes() []string {
	return []string{"application/pdf", "application/msword",
		"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		"application/vnd.ms-excel", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
		"application/vnd.ms-powerpoint", "application/vnd.openxmlformats-officedocument.presentationml.presentation",
		"text/plain", "text/csv", "application/rtf", "image/jpeg", "image/png", "image/gif", "image/bmp",
		"image/tiff", "image/webp", "image/svg+xml"}
}

// KindOf returns the route of a MIME type (parameters ignored).
func KindOf(mimeType string) Kind {
	t, _ := lookupType(baseType(mimeType))
	return t.kind
}

func baseType(mt string) string {
	if m, _, err := mime.ParseMediaType(mt); err == nil {
		return strings.ToLower(m)
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// DetectType sniffs a file's MIME type from its content (without
// parameters).
func DetectType(path string) (string, error) {
	m, err := mimetype.DetectFile(path)
	if err != nil {
		return "", fmt.Errorf("detect type: %w", err)
	}
	return baseType(m.String()), nil
}

// resolveType decides the route from the declared type and the sniffed
// one. Content wins when it names a specific supported type; the declared
// type wins where sniffing cannot tell (CSV vs plain text, a generic ZIP or
// OLE container).
func resolveType(declared, sniffed string) (string, typeInfo, error) {
	declared, sniffed = baseType(declared), baseType(sniffed)
	st, sok := lookupType(sniffed)
	dt, dok := lookupType(declared)
	if sok {
		// Plain text, CSV and prolog-less SVG all sniff as text: within
		// that family the declared type decides.
		if (sniffed == "text/plain" || sniffed == "text/csv") && dok &&
			(declared == "text/plain" || declared == "text/csv" || dt.kind == KindSVG) {
			return declared, dt, nil
		}
		return sniffed, st, nil
	}
	if dok && (sniffed == "" || sniffed == "application/octet-stream" || sniffed == "application/zip" ||
		sniffed == "application/x-ole-storage" || strings.HasPrefix(sniffed, "text/")) {
		return declared, dt, nil
	}
	return "", typeInfo{}, unsupported(declared, sniffed)
}
