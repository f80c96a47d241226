package corpus

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"os"
)

// WriteBombPNG writes a PNG whose header claims w×h pixels (8-bit grey)
// while the file holds a few kilobytes: decoding it would allocate w×h
// bytes. The image data is a valid zlib stream of the first rows only.
func WriteBombPNG(path string, w, h uint32) error {
	var b bytes.Buffer
	b.Write([]byte("\x89PNG\r\n\x1a\n"))
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 0 // bit depth 8, greyscale
	b.Write(pngChunk("IHDR", ihdr))
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	row := make([]byte, 1+min(int(w), 1<<16))
	for i := 0; i < 16; i++ {
		zw.Write(row)
	}
	zw.Close()
	b.Write(pngChunk("IDAT", z.Bytes()))
	b.Write(pngChunk("IEND", nil))
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// WriteZipBombDOCX writes a DOCX-shaped ZIP whose entries inflate to
// entries×entrySize bytes of zeros. One compressed block is reused for
// every entry, so a 2 GiB bomb costs about 2 MB of disk and a fraction of
// a second to write.
func WriteZipBombDOCX(path string, entries int, entrySize int64) error {
	// Deflate 1 MiB of zeros once, ending in a sync flush (a non-final,
	// byte-aligned block), repeat that segment and close the stream with an
	// empty final block. Every back-reference in a repeated segment points
	// at zeros, so the concatenation is a valid stream of the full size.
	const chunk = 1 << 20
	var seg bytes.Buffer
	fw, _ := flate.NewWriter(&seg, flate.BestCompression)
	zero := make([]byte, chunk)
	fw.Write(zero)
	fw.Flush()
	crc := crc32.NewIEEE()
	var comp bytes.Buffer
	for left := entrySize; left > 0; left -= chunk {
		if left < chunk {
			return fmt.Errorf("zip bomb: entry size must be a multiple of %d", chunk)
		}
		comp.Write(seg.Bytes())
		crc.Write(zero)
	}
	comp.Write([]byte{0x03, 0x00}) // BFINAL, fixed Huffman, end of block

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(name, content string) error {
		w, err := zw.Create(name)
		if err != nil {
			return err
		}
		_, err = w.Write([]byte(content))
		return err
	}
	if err := add("[Content_Types].xml", xmlHeader+`<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`); err != nil {
		return fmt.Errorf("zip bomb: %w", err)
	}
	if err := add("_rels/.rels", xmlHeader+`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`); err != nil {
		return fmt.Errorf("zip bomb: %w", err)
	}
	for i := 0; i < entries; i++ {
		name := fmt.Sprintf("word/media/padding%d.bin", i)
		if i == 0 {
			name = "word/document.xml"
		}
		w, err := zw.CreateRaw(&zip.FileHeader{Name: name, Method: zip.Deflate, CRC32: crc.Sum32(),
			CompressedSize64: uint64(comp.Len()), UncompressedSize64: uint64(entrySize)})
		if err != nil {
			return fmt.Errorf("zip bomb: %w", err)
		}
		if _, err := w.Write(comp.Bytes()); err != nil {
			return fmt.Errorf("zip bomb: %w", err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("zip bomb: %w", err)
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// WriteJPEGWithOrientation writes img as a JPEG carrying an EXIF APP1
// segment with the given Orientation tag (1–8). Orientation 6 means "rotate
// 90° clockwise to display": pass the image as the sensor stored it.
func WriteJPEGWithOrientation(path string, img image.Image, orientation uint16, dpi int) error {
	var enc bytes.Buffer
	if err := jpeg.Encode(&enc, img, &jpeg.Options{Quality: 90}); err != nil {
		return fmt.Errorf("encode jpeg: %w", err)
	}
	j := enc.Bytes()
	// TIFF structure inside APP1: header, IFD0 with Orientation,
	// XResolution, YResolution and ResolutionUnit.
	var t bytes.Buffer
	be := binary.BigEndian
	t.Write([]byte{'M', 'M', 0, 42, 0, 0, 0, 8})
	binary.Write(&t, be, uint16(4))
	entry := func(tag, typ uint16, count, value uint32) {
		binary.Write(&t, be, tag)
		binary.Write(&t, be, typ)
		binary.Write(&t, be, count)
		binary.Write(&t, be, value)
	}
	resOff := uint32(8 + 2 + 4*12 + 4)
	entry(0x0112, 3, 1, uint32(orientation)<<16) // SHORT, left-justified in big endian
	entry(0x011A, 5, 1, resOff)
	entry(0x011B, 5, 1, resOff+8)
	entry(0x0128, 3, 1, 2<<16) // inch
	binary.Write(&t, be, uint32(0))
	binary.Write(&t, be, [4]uint32{uint32(dpi), 1, uint32(dpi), 1})
	payload := append([]byte("Exif\x00\x00"), t.Bytes()...)
	app1 := []byte{0xFF, 0xE1, 0, 0}
	be.PutUint16(app1[2:], uint16(len(payload)+2))
	app1 = append(app1, payload...)
	out := make([]byte, 0, len(j)+len(app1))
	out = append(out, j[:2]...) // SOI
	out = append(out, app1...)
	out = append(out, j[2:]...)
	return os.WriteFile(path, out, 0o644)
}

// RotateCCW returns img turned 90° counter-clockwise: what a camera held
// sideways stores for a page that EXIF orientation 6 turns upright again.
func RotateCCW(src *image.Gray) *image.Gray {
	b := src.Bounds()
	dst := image.NewGray(image.Rect(0, 0, b.Dy(), b.Dx()))
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			// (x, y) → (y, W-1-x)
			dst.Pix[(b.Dx()-1-x)*dst.Stride+y] = src.Pix[y*src.Stride+x]
		}
	}
	return dst
}
