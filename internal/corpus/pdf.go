package corpus

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/pdfcpu/pdfcpu/pkg/api"

	"docflow/processing/pdfconf"
)

// pdfEscape escapes a string for a PDF literal; text is limited to
// Latin-1 (the standard Helvetica encoding), other runes become '?'.
func pdfEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 32 || r > 255:
			b.WriteByte('?')
		default:
			b.WriteByte(byte(r))
		}
	}
	return b.String()
}

// TextPDF returns a born-digital PDF (A4, Helvetica 11 pt), one page per
// entry of pages. It writes the objects and the cross-reference table
// itself: a 500-page file takes milliseconds and needs no office suite.
func TextPDF(pages [][]string) []byte { return textPDF(pages, 0) }

// PaddedTextPDF is TextPDF with an embedded file stream that no page
// shows added (before the cross-reference table, as a producer writes
// one), so that the file is size bytes or a little more: a document of a
// common size, whose weight in real files is fonts and images, read by
// the steps as the plain text PDF is. A line of pages may be patched in
// place afterwards with text of the same length.
func PaddedTextPDF(pages [][]string, size int) []byte {
	b := textPDF(pages, 0)
	// The padding object's own syntax and its cross-reference entry take
	// about 100 bytes beside its data; a second pass corrects the guess.
	pad := size - len(b) - 100
	for range 2 {
		if pad <= 0 || len(b) == size {
			break
		}
		b = textPDF(pages, pad)
		pad += size - len(b)
	}
	return b
}

func textPDF(pages [][]string, pad int) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	n := len(pages)
	// 1 catalog, 2 pages, 3 font, then per page: page object, content stream.
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	var kids strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&kids, "%d 0 R ", 4+2*i)
	}
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	for i, lines := range pages {
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		var c strings.Builder
		c.WriteString("BT /F1 11 Tf 14 TL 72 770 Td\n")
		for _, l := range lines {
			fmt.Fprintf(&c, "(%s) Tj T*\n", pdfEscape(l))
		}
		c.WriteString("ET")
		obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", c.Len(), c.String()))
	}
	if pad > 0 {
		data := make([]byte, pad)
		for i := range data {
			data[i] = byte('a' + i%26)
		}
		obj(fmt.Sprintf("<< /Type /EmbeddedFile /Length %d >>\nstream\n%s\nendstream", pad, data))
	}
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

// WriteTextPDF writes TextPDF(pages) to path.
func WriteTextPDF(path string, pages [][]string) error {
	return os.WriteFile(path, TextPDF(pages), 0o644)
}

// WriteZeroPagePDF writes a structurally valid PDF whose page tree is empty.
func WriteZeroPagePDF(path string) error {
	return os.WriteFile(path, TextPDF(nil), 0o644)
}

// WriteCorruptPDF writes the first half of a valid PDF: the header is
// right, the body and cross-reference table are missing.
func WriteCorruptPDF(path string) error {
	b := TextPDF([][]string{{"This file was cut in half."}, {"Second page."}})
	return os.WriteFile(path, b[:len(b)/2], 0o644)
}

// WriteEncryptedPDF writes a text PDF encrypted (AES-256) with a user
// password, so it cannot be opened without it.
func WriteEncryptedPDF(path, userPassword string) error {
	src := TextPDF([][]string{{"Confidential content behind a password."}})
	// pdfconf's configuration, not model.NewAESConfiguration's: pdfcpu's
	// own default races when tests generate corpora concurrently.
	conf := pdfconf.New()
	conf.UserPW, conf.OwnerPW = userPassword, userPassword+"-owner"
	conf.EncryptUsingAES, conf.EncryptKeyLength = true, 256
	var out bytes.Buffer
	if err := api.Encrypt(bytes.NewReader(src), &out, conf); err != nil {
		return fmt.Errorf("encrypt pdf: %w", err)
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}

// ActiveContentPDF returns a one-page text PDF (text: lines) that carries
// every kind of active content a viewer may run: a JavaScript OpenAction,
// a document JavaScript name tree, document and page additional actions,
// a link that launches a program, a web link with a script chained after
// it, and a bookmark that runs a script from a stream. Each script calls
// app.alert; the web link's address is https://example.com/.
func ActiveContentPDF(lines []string) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	obj(`<< /Type /Catalog /Pages 2 0 R /OpenAction 6 0 R /Names << /JavaScript 7 0 R >> /AA << /WC << /S /JavaScript /JS (app.alert\(2\)) >> >> /Outlines 10 0 R >>`)
	obj("<< /Type /Pages /Kids [4 0 R] /Count 1 >>")
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	obj(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> /Contents 5 0 R /Annots [8 0 R 9 0 R] /AA << /O << /S /JavaScript /JS (app.alert\(3\)) >> >> >>`)
	var c strings.Builder
	c.WriteString("BT /F1 11 Tf 14 TL 72 770 Td\n")
	for _, l := range lines {
		fmt.Fprintf(&c, "(%s) Tj T*\n", pdfEscape(l))
	}
	c.WriteString("ET")
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", c.Len(), c.String()))
	obj(`<< /Type /Action /S /JavaScript /JS (app.alert\('opened'\)) >>`)
	obj(`<< /Names [(init) << /S /JavaScript /JS (app.alert\(4\)) >>] >>`)
	obj(`<< /Type /Annot /Subtype /Link /Rect [72 600 200 620] /Border [0 0 0] /A << /S /Launch /F (calc.exe) >> >>`)
	obj(`<< /Type /Annot /Subtype /Link /Rect [72 560 200 580] /Border [0 0 0] /A << /S /URI /URI (https://example.com/) /Next << /S /JavaScript /JS (app.alert\(5\)) >> >> >>`)
	obj("<< /Type /Outlines /First 11 0 R /Last 11 0 R /Count 1 >>")
	obj("<< /Title (Start) /Parent 10 0 R /A 12 0 R >>")
	obj("<< /S /JavaScript /JS 13 0 R >>")
	js := "app.alert(6);"
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(js), js))
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}
