package corpus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// ScanOptions describe a simulated scan.
type ScanOptions struct {
	DPI         int     // default 300
	FontSize    float64 // points; default 12
	WidthMM     float64 // page width; default 210 (A4)
	HeightMM    float64 // page height; default 297
	Noise       float64 // share of pixels flipped to random grey (0–1)
	SkewDegrees float64 // rotation of the page content
	Seed        int64   // for the noise
}

func (o *ScanOptions) defaults() {
	if o.DPI <= 0 {
		o.DPI = 300
	}
	if o.FontSize <= 0 {
		o.FontSize = 12
	}
	if o.WidthMM <= 0 {
		o.WidthMM = 210
	}
	if o.HeightMM <= 0 {
		o.HeightMM = 297
	}
}

// Noisy is the preset for "with noise and skew" sets.
func Noisy(seed int64) ScanOptions {
	return ScanOptions{Noise: 0.02, SkewDegrees: 1.5, Seed: seed}
}

// RenderPage draws lines of text in Go Regular on a white greyscale page,
// like a 300 dpi scan, then applies skew and noise.
func RenderPage(lines []string, o ScanOptions) (*image.Gray, error) {
	o.defaults()
	w := int(o.WidthMM / 25.4 * float64(o.DPI))
	h := int(o.HeightMM / 25.4 * float64(o.DPI))
	img := image.NewGray(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)

	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return nil, fmt.Errorf("parse font: %w", err)
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: o.FontSize, DPI: float64(o.DPI), Hinting: font.HintingFull})
	if err != nil {
		return nil, fmt.Errorf("font face: %w", err)
	}
	defer face.Close()
	d := &font.Drawer{Dst: img, Src: image.Black, Face: face}
	margin := min(o.DPI, w/8, h/8) // one inch on a full page, less on a small label
	lineHeight := face.Metrics().Height.Ceil() * 3 / 2
	y := margin + face.Metrics().Ascent.Ceil()
	for _, l := range lines {
		if y > h-margin {
			break
		}
		d.Dot = fixed.P(margin, y)
		d.DrawString(l)
		y += lineHeight
	}
	out := img
	if o.SkewDegrees != 0 {
		out = rotate(img, o.SkewDegrees)
	}
	if o.Noise > 0 {
		r := NewRand(o.Seed)
		n := int(float64(w*h) * o.Noise)
		for i := 0; i < n; i++ {
			out.Pix[r.IntN(len(out.Pix))] = uint8(r.IntN(256))
		}
	}
	return out, nil
}

// rotate turns the page content by deg degrees around its centre (bilinear
// sampling, white outside), as a skewed sheet on a scanner would.
func rotate(src *image.Gray, deg float64) *image.Gray {
	b := src.Bounds()
	dst := image.NewGray(b)
	sin, cos := math.Sincos(deg * math.Pi / 180)
	cx, cy := float64(b.Dx())/2, float64(b.Dy())/2
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			dx, dy := float64(x)-cx, float64(y)-cy
			sx := cos*dx + sin*dy + cx
			sy := -sin*dx + cos*dy + cy
			x0, y0 := int(math.Floor(sx)), int(math.Floor(sy))
			if x0 < 0 || y0 < 0 || x0+1 >= b.Dx() || y0+1 >= b.Dy() {
				dst.Pix[y*dst.Stride+x] = 255
				continue
			}
			fx, fy := sx-float64(x0), sy-float64(y0)
			p := func(x, y int) float64 { return float64(src.Pix[y*src.Stride+x]) }
			v := p(x0, y0)*(1-fx)*(1-fy) + p(x0+1, y0)*fx*(1-fy) + p(x0, y0+1)*(1-fx)*fy + p(x0+1, y0+1)*fx*fy
			dst.Pix[y*dst.Stride+x] = uint8(v + 0.5)
		}
	}
	return dst
}

// EncodePNG encodes img as PNG with a pHYs chunk recording dpi, so that
// converters know the page's true size.
func EncodePNG(img image.Image, dpi int) ([]byte, error) {
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("encode png: %w", err)
	}
	b := buf.Bytes()
	if dpi <= 0 {
		return b, nil
	}
	// pHYs goes right after IHDR (8-byte signature + 25-byte IHDR chunk).
	ppm := uint32(math.Round(float64(dpi) / 0.0254))
	data := make([]byte, 9)
	binary.BigEndian.PutUint32(data[0:], ppm)
	binary.BigEndian.PutUint32(data[4:], ppm)
	data[8] = 1 // unit: metre
	chunk := pngChunk("pHYs", data)
	out := make([]byte, 0, len(b)+len(chunk))
	out = append(out, b[:33]...)
	out = append(out, chunk...)
	return append(out, b[33:]...), nil
}

func pngChunk(typ string, data []byte) []byte {
	c := make([]byte, 8, 12+len(data))
	binary.BigEndian.PutUint32(c, uint32(len(data)))
	copy(c[4:], typ)
	c = append(c, data...)
	crc := crc32.ChecksumIEEE(c[4:])
	return binary.BigEndian.AppendUint32(c, crc)
}

// WritePNG writes img as a PNG at dpi.
func WritePNG(path string, img image.Image, dpi int) error {
	b, err := EncodePNG(img, dpi)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// grayToRGBA is used where an encoder needs colour input.
func grayToRGBA(g *image.Gray) *image.RGBA {
	out := image.NewRGBA(g.Bounds())
	for i, v := range g.Pix {
		out.Pix[4*i], out.Pix[4*i+1], out.Pix[4*i+2], out.Pix[4*i+3] = v, v, v, 255
	}
	return out
}
