package corpus

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"os"
)

// WriteTIFF writes greyscale pages as one multi-page TIFF (one IFD per
// page, Deflate-compressed, resolution recorded). x/image/tiff writes a
// single page only, and multi-page scans are what office scanners send.
func WriteTIFF(path string, pages []*image.Gray, dpi int) error {
	b, err := EncodeTIFF(pages, dpi)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// EncodeTIFF returns the bytes WriteTIFF writes.
func EncodeTIFF(pages []*image.Gray, dpi int) ([]byte, error) {
	if len(pages) == 0 {
		return nil, fmt.Errorf("tiff: no pages")
	}
	le := binary.LittleEndian
	var out bytes.Buffer
	out.Write([]byte{'I', 'I', 42, 0, 0, 0, 0, 0}) // header; first IFD offset patched below
	prevNext := 4                                  // where to patch the offset of the next IFD
	for _, p := range pages {
		// Strip data.
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		bnd := p.Bounds()
		for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
			zw.Write(p.Pix[(y-bnd.Min.Y)*p.Stride : (y-bnd.Min.Y)*p.Stride+bnd.Dx()])
		}
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("tiff: compress: %w", err)
		}
		for out.Len()%2 != 0 {
			out.WriteByte(0)
		}
		stripOff := out.Len()
		out.Write(z.Bytes())
		for out.Len()%2 != 0 {
			out.WriteByte(0)
		}
		// Resolution rationals.
		resOff := out.Len()
		binary.Write(&out, le, [4]uint32{uint32(dpi), 1, uint32(dpi), 1})
		ifdOff := out.Len()
		b := out.Bytes()
		le.PutUint32(b[prevNext:], uint32(ifdOff))
		type entry struct {
			tag, typ uint16
			count    uint32
			value    uint32
		}
		const short, long, rational = 3, 4, 5
		entries := []entry{
			{256, long, 1, uint32(bnd.Dx())},   // ImageWidth
			{257, long, 1, uint32(bnd.Dy())},   // ImageLength
			{258, short, 1, 8},                 // BitsPerSample
			{259, short, 1, 8},                 // Compression: Deflate
			{262, short, 1, 1},                 // Photometric: BlackIsZero
			{273, long, 1, uint32(stripOff)},   // StripOffsets
			{277, short, 1, 1},                 // SamplesPerPixel
			{278, long, 1, uint32(bnd.Dy())},   // RowsPerStrip
			{279, long, 1, uint32(z.Len())},    // StripByteCounts
			{282, rational, 1, uint32(resOff)}, // XResolution
			{283, rational, 1, uint32(resOff + 8)},
			{296, short, 1, 2}, // ResolutionUnit: inch
		}
		binary.Write(&out, le, uint16(len(entries)))
		for _, e := range entries {
			binary.Write(&out, le, e.tag)
			binary.Write(&out, le, e.typ)
			binary.Write(&out, le, e.count)
			binary.Write(&out, le, e.value) // SHORT values sit in the low bytes (little endian)
		}
		prevNext = out.Len()
		binary.Write(&out, le, uint32(0))
	}
	return out.Bytes(), nil
}
