package corpus

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"os"
)

// The samples of this file stay inside every size limit of intake and
// inside the pixel limit of images, yet drive the tools that render them to
// gigabytes: what the tools' memory limit and the page and image pixel caps
// are tested with.

// HugePagePDF returns a PDF of a few hundred bytes with one blank page of
// w×h points and no text: OCR has to rasterise it, and at 300 dpi a
// 4800 × 4800 pt page is 20000 × 20000 pixels.
func HugePagePDF(w, h int) []byte {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) {
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	buf.WriteString("%PDF-1.4\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R >>", w, h))
	content := "0 0 m 100 100 l S"
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return buf.Bytes()
}

// WriteHugePagePDF writes HugePagePDF(w, h) to path.
func WriteHugePagePDF(path string, w, h int) error {
	return os.WriteFile(path, HugePagePDF(w, h), 0o644)
}

// BlankPNG returns a complete, valid w×h white 8-bit greyscale PNG that
// compresses to well under a megabyte for 13000² pixels: unlike
// WriteBombPNG's file, every row is there, so a reader really decodes
// w×h pixels. Each row is deflated once from a fresh state and the
// segment repeated (its back-references stay inside the row), so writing
// costs only the checksum over the rows.
func BlankPNG(w, h int) []byte {
	row := make([]byte, 1+w) // filter type 0, then white pixels
	for i := 1; i < len(row); i++ {
		row[i] = 0xFF
	}
	var seg bytes.Buffer
	fw, _ := flate.NewWriter(&seg, flate.BestCompression)
	fw.Write(row)
	fw.Flush()
	sum := adler32.New()
	var z bytes.Buffer
	z.Write([]byte{0x78, 0xDA}) // zlib header: deflate, 32 KiB window, best compression
	for i := 0; i < h; i++ {
		z.Write(seg.Bytes())
		sum.Write(row)
	}
	z.Write([]byte{0x03, 0x00}) // an empty final block
	z.Write(sum.Sum(nil))

	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8] = 8 // bit depth 8, greyscale
	b.Write(pngChunk("IHDR", ihdr))
	b.Write(pngChunk("IDAT", z.Bytes()))
	b.Write(pngChunk("IEND", nil))
	return b.Bytes()
}

// WriteBlankPNG writes BlankPNG(w, h) to path.
func WriteBlankPNG(path string, w, h int) error {
	return os.WriteFile(path, BlankPNG(w, h), 0o644)
}

// WriteDOCXWithImage writes a one-paragraph DOCX showing img (PNG bytes)
// as an inline picture, 15 × 15 cm on the page whatever its pixel size.
func WriteDOCXWithImage(path, text string, img []byte) error {
	const emu = 5400000 // 15 cm
	drawing := fmt.Sprintf(`<w:r><w:drawing><wp:inline><wp:extent cx="%d" cy="%d"/><wp:docPr id="1" name="Picture 1"/>`+
		`<a:graphic><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:pic>`+
		`<pic:nvPicPr><pic:cNvPr id="1" name="image1.png"/><pic:cNvPicPr/></pic:nvPicPr>`+
		`<pic:blipFill><a:blip r:embed="rId2"/><a:stretch><a:fillRect/></a:stretch></pic:blipFill>`+
		`<pic:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="%d" cy="%d"/></a:xfrm><a:prstGeom prst="rect"><a:avLst/></a:prstGeom></pic:spPr>`+
		`</pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`, emu, emu, emu, emu)
	files := map[string]string{
		"[Content_Types].xml": xmlHeader + `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
			`<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>` +
			`<Default Extension="xml" ContentType="application/xml"/>` +
			`<Default Extension="png" ContentType="image/png"/>` +
			`<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"_rels/.rels": xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
		"word/_rels/document.xml.rels": xmlHeader + `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/></Relationships>`,
		"word/document.xml": xmlHeader + `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"` +
			` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"` +
			` xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"` +
			` xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"` +
			` xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><w:body>` +
			`<w:p><w:r><w:t xml:space="preserve">` + xmlEscape(text) + `</w:t></w:r></w:p><w:p>` + drawing + `</w:p>` +
			`<w:sectPr><w:pgSz w:w="11906" w:h="16838"/><w:pgMar w:top="1440" w:right="1440" w:bottom="1440" w:left="1440" w:header="708" w:footer="708" w:gutter="0"/></w:sectPr></w:body></w:document>`,
	}
	names := []string{"[Content_Types].xml", "_rels/.rels", "word/_rels/document.xml.rels", "word/document.xml"}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.Create(n)
		if err != nil {
			return fmt.Errorf("docx %s: %w", n, err)
		}
		if _, err := w.Write([]byte(files[n])); err != nil {
			return fmt.Errorf("docx %s: %w", n, err)
		}
	}
	// Stored: the PNG is compressed already.
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "word/media/image1.png", Method: zip.Store})
	if err != nil {
		return fmt.Errorf("docx image: %w", err)
	}
	if _, err := w.Write(img); err != nil {
		return fmt.Errorf("docx image: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("docx: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
