package convert

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"docflow"
)

// pngHeader is the start of a PNG claiming w×h RGBA pixels: the signature
// and the IHDR chunk, then a few bytes of deflate data (a decompression
// bomb's header; the pixels are never there).
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data))) //nolint:errcheck // a bytes.Buffer
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc.Sum32()) //nolint:errcheck // a bytes.Buffer
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6 // 8 bits, RGBA
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00})
	chunk("IEND", nil)
	return b.Bytes()
}

// The in-process decoder reads the header first: an image claiming
// 100000 × 100000 pixels is refused at once, with nothing allocated for
// its pixels; one within the pixel limit whose decoding needs more than
// the tools' memory bound (TOOL_MEMORY_LIMIT) is refused too; a small one
// is decoded.
func TestFlattenRefusesBeforeDecoding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bomb := filepath.Join(dir, "bomb.png")
	if err := os.WriteFile(bomb, pngHeader(100000, 100000), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.png")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	err := flatten(bomb, out, DefaultMaxPixels, 1<<30)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "100000x100000 = 10000000000 pixels, more than the limit of 178956970") {
		t.Fatalf("bomb: %v", err)
	}
	// NOTE: TotalAlloc counts the whole process; the parallel tests'
	// allocations stay far below the 40 GB this image would take.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("refusing the bomb allocated %d bytes", alloc)
	}
	if took > 2*time.Second {
		t.Errorf("refusing the bomb took %v", took)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("an output was written")
	}

	// 12000 × 12000 is under the pixel limit, but decoding it (RGBA plus
	// the canvas, 8 bytes a pixel) needs about 1.1 GB.
	big := filepath.Join(dir, "big.png")
	if err := os.WriteFile(big, pngHeader(12000, 12000), 0o600); err != nil {
		t.Fatal(err)
	}
	err = flatten(big, out, DefaultMaxPixels, 1<<30)
	if docflow.ErrorCode(err) != docflow.EINVALID || !strings.Contains(err.Error(), "TOOL_MEMORY_LIMIT, 1 GiB") {
		t.Fatalf("over the memory bound: %v", err)
	}

	small := filepath.Join(dir, "small.png")
	img := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	img.Set(3, 4, color.NRGBA{R: 255, A: 128})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(small, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := flatten(small, out, DefaultMaxPixels, 1<<30); err != nil {
		t.Fatalf("small image: %v", err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := png.Decode(f)
	if err != nil || got.Bounds().Dx() != 40 || got.Bounds().Dy() != 30 {
		t.Fatalf("flattened: %v %v", got.Bounds(), err)
	}
	if _, _, _, a := got.At(0, 0).RGBA(); a != 0xffff {
		t.Errorf("not opaque: alpha %x", a)
	}
}
