package e2etest

import (
	"bytes"
	"mime/multipart"
	"testing"
)

// Multipart is the body of an upload: one file in the form field "file".
type Multipart struct {
	Body        *bytes.Buffer
	ContentType string // multipart/form-data with its boundary
}

// NewMultipart builds the upload of one file called name holding content.
func NewMultipart(t testing.TB, name, content string) Multipart {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(content)) //nolint:errcheck
	w.Close()
	return Multipart{Body: &buf, ContentType: w.FormDataContentType()}
}
