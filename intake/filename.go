package intake

import (
	"path"
	"strings"

	"github.com/gabriel-vasile/mimetype"

	"docflow"
)

// maxFilenameBytes is docflow.CleanFilename's bound on a name.
const maxFilenameBytes = 255

// SanitizeFilename reduces a client-supplied name to a safe base name
// (docflow.CleanFilename): the last path element, without control and
// invisible format characters (bidi overrides, zero-width characters),
// fullwidth dots and slashes, "..", leading dots or surrounding spaces,
// with a Windows device name prefixed by "_", at most 255 bytes. An empty
// result becomes "upload".
func SanitizeFilename(name string) string { return docflow.CleanFilename(name) }

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
