package intake

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gabriel-vasile/mimetype"

	"docflow"
)

// maxFilenameBytes keeps names within what every filesystem and the
// Content-Disposition header accept.
const maxFilenameBytes = 255

// SanitizeFilename reduces a client-supplied name to a safe base name: the
// last path element (either separator), without control characters, "..",
// leading dots or surrounding spaces, valid UTF-8 and at most 255 bytes with
// the extension kept. An empty result becomes "upload".
func SanitizeFilename(name string) string {
	name = strings.ToValidUTF8(name, "")
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError || r == '/' || r == '\\' {
			return -1
		}
		return r
	}, name)
	for strings.Contains(name, "..") {
		name = strings.ReplaceAll(name, "..", ".")
	}
	name = strings.TrimSpace(name)
	name = strings.TrimLeft(name, ". ")
	name = strings.TrimRight(name, ". ")
	if name == "" {
		return "upload"
	}
	if len(name) > maxFilenameBytes {
		ext := path.Ext(name)
		if len(ext) > 16 {
			ext = ""
		}
		base := name[:maxFilenameBytes-len(ext)]
		for !utf8.ValidString(base) {
			base = base[:len(base)-1]
		}
		name = base + ext
	}
	return name
}

// Extension returns the lower-case extension of name without the dot.
func Extension(name string) string {
	return strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
}

// sniffAccepts lists, per extension, the detected types (or ancestors of
// the detected type) that content with that extension may have.
var sniffAccepts = map[string][]string{
	"pdf":  {"application/pdf"},
	"doc":  {"application/msword", "application/x-ole-storage"},
	"xls":  {"application/vnd.ms-excel", "application/x-ole-storage"},
	"ppt":  {"application/vnd.ms-powerpoint", "application/x-ole-storage"},
	"docx": {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip"},
	"xlsx": {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "application/zip"},
	"pptx": {"application/vnd.openxmlformats-officedocument.presentationml.presentation", "application/zip"},
	"txt":  {"text/plain"},
	"csv":  {"text/plain"},
	"rtf":  {"text/rtf"},
	"jpg":  {"image/jpeg"},
	"jpeg": {"image/jpeg"},
	"png":  {"image/png"},
	"gif":  {"image/gif"},
	"bmp":  {"image/bmp"},
	"tiff": {"image/tiff"},
	"tif":  {"image/tiff"},
	"webp": {"image/webp"},
	"svg":  {"image/svg+xml"},
}

// checkType returns the MIME type recorded for a file named with ext whose
// first bytes are head, or EBADREQUEST when the extension is not supported
// or the content is something else.
//
// NOTE: office formats are sniffed from the head only; a zip whose part
// names lie beyond it is accepted as its extension says, since the
// conversion step reads it whole anyway.
func checkType(ext string, head []byte) (string, error) {
	mimeType, ok := docflow.SupportedFileTypes()[ext]
	if !ok {
		return "", unsupported()
	}
	detected := mimetype.Detect(head)
	for m := detected; m != nil; m = m.Parent() {
		for _, want := range sniffAccepts[ext] {
			if m.Is(want) {
				return mimeType, nil
			}
		}
	}
	return "", docflow.Errorf(docflow.EBADREQUEST,
		"File content (%s) does not match its extension .%s. Supported file types: %s",
		detected.String(), ext, docflow.SupportedTypesText())
}

func unsupported() error {
	return docflow.Errorf(docflow.EBADREQUEST, "Unsupported file type. Supported file types: %s", docflow.SupportedTypesText())
}
