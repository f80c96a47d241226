package http

import (
	"bytes"
	"errors"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"
	"testing"
	"testing/iotest"
)

// stdFilePart is the reference: mime/multipart's reading of the same body.
func stdFilePart(body []byte, boundary string) (name string, content []byte, err error) {
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := mr.NextPart()
		if err != nil {
			return "", nil, err
		}
		if p.FormName() == "file" {
			b, err := io.ReadAll(p)
			return p.FileName(), b, err
		}
	}
}

func ourFilePart(body []byte, boundary string, r func(io.Reader) io.Reader) (string, []byte, error) {
	f, err := readFilePart(r(bytes.NewReader(body)), boundary)
	if err != nil {
		return "", nil, err
	}
	b, err := io.ReadAll(f)
	return f.FileName(), b, err
}

// formBody builds a form as clients do: fields, then the file, then more.
func formBody(boundary, before, filename string, content []byte, after string) []byte {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.SetBoundary(boundary); err != nil {
		panic(err)
	}
	if before != "" {
		mw.WriteField("note", before)
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+strings.NewReplacer(`"`, `\"`, "\\", `\\`).Replace(filename)+`"`)
	h.Set("Content-Type", "application/pdf")
	w, _ := mw.CreatePart(h)
	w.Write(content)
	if after != "" {
		mw.WriteField("after", after)
	}
	mw.Close()
	return buf.Bytes()
}

func readers() map[string]func(io.Reader) io.Reader {
	return map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r },
		"byte":  iotest.OneByteReader,
		"half":  iotest.HalfReader,
	}
}

func TestFilePartMatchesMimeMultipart(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("0123456789\r\n--notTheBoundary\r\n"), 10_000) // 300 KB, > the buffer
	cases := []struct {
		name, boundary, before, filename string
		content                          []byte
		after                            string
	}{
		{"plain", "b0undary", "", "a.pdf", []byte("%PDF-1.4 hello"), ""},
		{"fields around", "xyz", "some note", "dir/../x.pdf", []byte("%PDF"), "tail"},
		{"empty file", "xyz", "", "e.pdf", nil, ""},
		{"big", "0123456789abcdef0123456789abcdef", "n", "big.pdf", big, "after"},
		{"near miss", "bnd", "", "n.pdf", []byte("x\r\n--bndX\r\n--bn\r\n--bnd-y"), ""},
		{"delimiter at buffer edge", "edge", "", "e.pdf", bytes.Repeat([]byte("a"), formBufSize-3), ""},
		{"path in name", "b", "", `C:\Users\me\scan.pdf`, []byte("x"), ""},
	}
	for _, c := range cases {
		body := formBody(c.boundary, c.before, c.filename, c.content, c.after)
		wantName, want, wantErr := stdFilePart(body, c.boundary)
		for rn, r := range readers() {
			name, got, err := ourFilePart(body, c.boundary, r)
			if (err != nil) != (wantErr != nil) || name != wantName || !bytes.Equal(got, want) {
				t.Fatalf("%s (%s): got %q %d bytes %v; mime/multipart %q %d bytes %v", c.name, rn, name, len(got), err, wantName, len(want), wantErr)
			}
		}
	}
}

func TestFilePartBadBodies(t *testing.T) {
	t.Parallel()
	body := formBody("bnd", "", "a.pdf", []byte("%PDF-1.4 content"), "")
	cut := body[:bytes.Index(body, []byte("content"))+3]
	if _, _, err := ourFilePart(cut, "bnd", func(r io.Reader) io.Reader { return r }); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cut-off body: %v", err)
	}
	for name, b := range map[string]string{
		"no parts":      "--bnd--\r\n",
		"empty":         "",
		"only a field":  "--bnd\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nv\r\n--bnd--\r\n",
		"header no end": "--bnd\r\nContent-Disposition: form-data; name=\"file\"",
		"bad header":    "--bnd\r\nnot a header\r\n\r\nv\r\n--bnd--\r\n",
	} {
		if _, _, err := ourFilePart([]byte(b), "bnd", func(r io.Reader) io.Reader { return r }); err == nil {
			t.Fatalf("%s: accepted", name)
		}
	}
	// Too much before the file.
	big := formBody("bnd", strings.Repeat("x", maxOtherParts+10), "a.pdf", []byte("x"), "")
	if _, _, err := ourFilePart(big, "bnd", func(r io.Reader) io.Reader { return r }); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("oversized fields: %v", err)
	}
}

// FuzzFilePart: on forms as clients write them the reader agrees with
// mime/multipart, whatever the names, content and boundary; on arbitrary
// bytes it never panics or loops.
func FuzzFilePart(f *testing.F) {
	f.Add("bnd", "note", "a.pdf", []byte("%PDF-1.4"), "", []byte("--bnd\r\n"))
	f.Add("x", "", "../../etc/passwd", []byte("\r\n--x-\r\n--x "), "after", []byte("--x--"))
	f.Add("abc", "", "ü.pdf", []byte{}, "", []byte("--abc\r\nContent-Disposition: form-data; name=file\r\n\r\n"))
	f.Fuzz(func(t *testing.T, boundary, before, filename string, content []byte, after string, raw []byte) {
		if len(content) > 1<<20 || len(raw) > 1<<20 {
			return
		}
		// Arbitrary bytes: any outcome but a hang or a panic.
		if boundary != "" && len(boundary) <= maxBoundary {
			if f, err := readFilePart(bytes.NewReader(raw), boundary); err == nil {
				io.Copy(io.Discard, f)
			}
		}
		mw := multipart.NewWriter(io.Discard)
		if mw.SetBoundary(boundary) != nil || strings.ContainsAny(filename, "\r\n") {
			return
		}
		body := formBody(boundary, before, filename, content, after)
		wantName, want, wantErr := stdFilePart(body, boundary)
		if wantErr != nil {
			return
		}
		name, got, err := ourFilePart(body, boundary, iotest.HalfReader)
		if err != nil || name != wantName || !bytes.Equal(got, want) {
			t.Fatalf("got %q %q %v; mime/multipart %q %q", name, got, err, wantName, want)
		}
	})
}
