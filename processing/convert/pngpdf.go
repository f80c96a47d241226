package convert

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// errPNGFallback marks a PNG that pngToPDF leaves to img2pdf.
var errPNGFallback = errors.New("png needs img2pdf")

// maxIDAT bounds the IDAT chunks pngToPDF lists (encoders write a few
// hundred at most; a hostile file could hold millions of empty ones).
const maxIDAT = 1 << 16

// pngInfo is what pngToPDF reads from a PNG's chunks.
type pngInfo struct {
	width, height int
	depth         int
	colorType     int
	palette       []byte     // PLTE, RGB triples
	dpiX, dpiY    float64    // from pHYs, 0 when absent
	idat          [][2]int64 // offset and length of every IDAT chunk's data
}

// readPNGInfo walks the chunks of a PNG without inflating anything.
func readPNGInfo(f io.ReadSeeker) (*pngInfo, error) {
	var sig [8]byte
	if _, err := io.ReadFull(f, sig[:]); err != nil || string(sig[:]) != "\x89PNG\r\n\x1a\n" {
		return nil, errors.New("not a PNG")
	}
	p := &pngInfo{}
	pos := int64(8)
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(f, hdr[:]); err != nil {
			return nil, fmt.Errorf("png chunk at %d: %w", pos, err)
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:])
		data := pos + 8
		if n > 1<<31-1 {
			return nil, fmt.Errorf("png chunk %q too long", typ)
		}
		readData := func(max int64) ([]byte, error) {
			if n > max {
				return nil, fmt.Errorf("png chunk %q has %d bytes", typ, n)
			}
			b := make([]byte, n)
			_, err := io.ReadFull(f, b)
			return b, err
		}
		switch typ {
		case "IHDR":
			b, err := readData(13)
			if err != nil || n != 13 {
				return nil, errors.New("png: bad IHDR")
			}
			p.width = int(binary.BigEndian.Uint32(b[0:]))
			p.height = int(binary.BigEndian.Uint32(b[4:]))
			p.depth, p.colorType = int(b[8]), int(b[9])
			if b[10] != 0 || b[11] != 0 || b[12] != 0 { // compression, filter, interlace
				return nil, errPNGFallback
			}
		case "PLTE":
			b, err := readData(768)
			if err != nil || n%3 != 0 || n == 0 {
				return nil, errors.New("png: bad PLTE")
			}
			p.palette = b
		case "pHYs":
			b, err := readData(9)
			if err != nil || n != 9 {
				return nil, errors.New("png: bad pHYs")
			}
			if b[8] == 1 { // pixels per metre
				p.dpiX = float64(binary.BigEndian.Uint32(b[0:])) * 0.0254
				p.dpiY = float64(binary.BigEndian.Uint32(b[4:])) * 0.0254
			}
		case "tRNS", "eXIf":
			// Transparency, and an EXIF orientation: img2pdf (or the
			// flattening fallback) decides.
			return nil, errPNGFallback
		case "IDAT":
			if len(p.idat) >= maxIDAT {
				return nil, errPNGFallback
			}
			p.idat = append(p.idat, [2]int64{data, n})
		case "IEND":
			if p.width <= 0 || p.height <= 0 || len(p.idat) == 0 {
				return nil, errors.New("png: no image data")
			}
			return p, nil
		}
		pos = data + n + 4 // data and CRC
		if _, err := f.Seek(pos, io.SeekStart); err != nil {
			return nil, err
		}
	}
}

// pngToPDF writes a one-page PDF that holds a PNG's compressed image data
// as it is (FlateDecode with the PNG predictors, as img2pdf does), sized by
// the PNG's resolution (96 dpi when it has none, as img2pdf assumes): no
// pixel is decoded or re-encoded, so a 300 dpi A4 scan takes a millisecond
// instead of an img2pdf process. It returns errPNGFallback, with nothing
// written, for what PDF cannot take this way: interlacing, transparency
// (alpha channel or tRNS) and 16-bit samples.
func pngToPDF(in, out string) error {
	f, err := os.Open(in)
	if err != nil {
		return fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	p, err := readPNGInfo(f)
	if err != nil {
		return err
	}
	var colorSpace string
	colors := 1
	switch {
	case p.colorType == 0 && p.depth <= 8:
		colorSpace = "/DeviceGray"
	case p.colorType == 2 && p.depth == 8:
		colorSpace, colors = "/DeviceRGB", 3
	case p.colorType == 3 && p.depth <= 8 && p.palette != nil:
		colorSpace = fmt.Sprintf("[/Indexed /DeviceRGB %d <%s>]", len(p.palette)/3-1, hex.EncodeToString(p.palette))
	default:
		return errPNGFallback
	}
	dpiX, dpiY := p.dpiX, p.dpiY
	if dpiX < 1 || dpiY < 1 {
		dpiX, dpiY = 96, 96
	}
	// pHYs counts pixels per metre: 300 dpi is stored as 11811, which is
	// 299.9994 dpi; the scanner meant 300.
	dpiX, dpiY = nearInt(dpiX), nearInt(dpiY)
	var size int64
	for _, c := range p.idat {
		size += c[1]
	}

	o, err := os.Create(out)
	if err != nil {
		return err
	}
	w := &countWriter{w: bufio.NewWriterSize(o, 256<<10)}
	var offsets []int64
	obj := func(body string) {
		offsets = append(offsets, w.n)
		fmt.Fprintf(w, "%d 0 obj\n%s\nendobj\n", len(offsets), body)
	}
	pw, ph := float64(p.width)*72/dpiX, float64(p.height)*72/dpiY
	content := fmt.Sprintf("q\n%.4f 0 0 %.4f 0 0 cm\n/Im0 Do\nQ\n", pw, ph)

	io.WriteString(w, "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj("<< /Type /Pages /Kids [3 0 R] /Count 1 >>")
	obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.4f %.4f] /Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>", pw, ph))
	offsets = append(offsets, w.n)
	fmt.Fprintf(w, "4 0 obj\n<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace %s /BitsPerComponent %d /Filter /FlateDecode /DecodeParms << /Predictor 15 /Colors %d /BitsPerComponent %d /Columns %d >> /Length %d >>\nstream\n",
		p.width, p.height, colorSpace, p.depth, colors, p.depth, p.width, size)
	for _, c := range p.idat {
		if _, err := f.Seek(c[0], io.SeekStart); err != nil {
			return failWrite(o, out, err)
		}
		if _, err := io.CopyN(w, f, c[1]); err != nil {
			return failWrite(o, out, fmt.Errorf("png image data: %w", err))
		}
	}
	io.WriteString(w, "\nendstream\nendobj\n")
	obj(fmt.Sprintf("<< /Length %d >>\nstream\n%sendstream", len(content), content))
	xref := w.n
	fmt.Fprintf(w, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(w, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(w, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	if w.err != nil {
		return failWrite(o, out, w.err)
	}
	if err := w.w.(*bufio.Writer).Flush(); err != nil {
		return failWrite(o, out, err)
	}
	if err := o.Close(); err != nil {
		os.Remove(out)
		return err
	}
	return nil
}

func nearInt(v float64) float64 {
	if r := math.Round(v); math.Abs(v-r) < 0.01 {
		return r
	}
	return v
}

func failWrite(o *os.File, path string, err error) error {
	o.Close()
	os.Remove(path)
	return err
}

// countWriter counts the bytes written (the PDF's cross-reference table
// needs every object's offset) and keeps the first error.
type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}
