package corpus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"os"
)

// bitWriter packs bits least-significant first, as VP8L reads them.
type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) write(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

func (w *bitWriter) bytes() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

// EncodeBilevelWebP encodes a greyscale image thresholded to black and white
// as a lossless WebP (VP8L). With two colours every prefix code is a
// "simple code" of one or two symbols, so no Huffman tables are needed;
// Go has a WebP decoder but no encoder, and the corpus needs a WebP scan.
func EncodeBilevelWebP(img *image.Gray) ([]byte, error) {
	b := img.Bounds()
	if b.Dx() < 1 || b.Dy() < 1 || b.Dx() > 16384 || b.Dy() > 16384 {
		return nil, fmt.Errorf("webp: size %dx%d out of range", b.Dx(), b.Dy())
	}
	var w bitWriter
	w.write(0x2f, 8)
	w.write(uint64(b.Dx()-1), 14)
	w.write(uint64(b.Dy()-1), 14)
	w.write(0, 1)          // alpha not used
	w.write(0, 3)          // version
	w.write(0, 1)          // no transform
	w.write(0, 1)          // no colour cache
	w.write(0, 1)          // no meta prefix codes
	twoSymbols := func() { // symbols 0 and 255, one bit each
		w.write(1, 1) // simple code
		w.write(1, 1) // two symbols
		w.write(1, 1) // first symbol has 8 bits
		w.write(0, 8)
		w.write(255, 8)
	}
	twoSymbols() // green
	twoSymbols() // red
	twoSymbols() // blue
	// alpha: the single symbol 255 (costs no bits per pixel)
	w.write(1, 1)
	w.write(0, 1)
	w.write(1, 1)
	w.write(255, 8)
	// distance: the single symbol 0
	w.write(1, 1)
	w.write(0, 1)
	w.write(0, 1)
	w.write(0, 1)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			var bit uint64
			if img.GrayAt(x, y).Y >= 128 {
				bit = 1
			}
			w.write(bit|bit<<1|bit<<2, 3) // green, red, blue
		}
	}
	data := w.bytes()
	var out bytes.Buffer
	chunkLen := len(data)
	pad := chunkLen % 2
	out.WriteString("RIFF")
	binary.Write(&out, binary.LittleEndian, uint32(4+8+chunkLen+pad))
	out.WriteString("WEBPVP8L")
	binary.Write(&out, binary.LittleEndian, uint32(chunkLen))
	out.Write(data)
	if pad == 1 {
		out.WriteByte(0)
	}
	return out.Bytes(), nil
}

// WriteWebP writes EncodeBilevelWebP(img) to path.
func WriteWebP(path string, img *image.Gray) error {
	b, err := EncodeBilevelWebP(img)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
