package convert

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif"
	_ "image/jpeg" // decoders for DecodeConfig and the fallback path
	"image/png"
	"io"
	"os"
	"path/filepath"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"docflow"
	"docflow/internal/proc"
)

// image converts a raster image (a PNG in process when it can, see
// pngToPDF; the rest with img2pdf): JPEG and most PNG and TIFF
// are embedded without re-encoding, every frame becomes a page sized by the
// image's resolution, and the EXIF orientation becomes the page rotation.
// The header is checked against MaxPixels and MaxFrames first, so a
// decompression bomb never reaches a decoder.
func (c *Converter) image(ctx context.Context, in, mt, out string) error {
	if err := c.checkImage(in, mt); err != nil {
		return err
	}
	if mt == "image/png" {
		// Most scans: the compressed data goes into the PDF as it is, in
		// process. Anything else, and any PNG this cannot take, goes to
		// img2pdf, which decides.
		tmp := out + ".png.part"
		if err := pngToPDF(in, tmp); err == nil {
			return moveFile(tmp, out)
		}
	}
	bin, err := proc.Look("img2pdf")
	if err != nil {
		return err
	}
	dir, cleanup, err := c.workDir("image")
	if err != nil {
		return err
	}
	defer cleanup()
	dst := filepath.Join(dir, "out.pdf")
	_, err = proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"--output", dst, in}, Dir: dir, Timeout: c.opts.ToolTimeout})
	if err != nil {
		if code := docflow.ErrorCode(err); code == docflow.ETIMEOUT || ctx.Err() != nil {
			return err
		}
		// img2pdf refuses some valid images (PNG with alpha, unusual BMP
		// headers): decode them here, flatten on white and try again.
		flat := filepath.Join(dir, "flat.png")
		if ferr := flatten(in, flat, c.opts.MaxPixels, proc.MemoryLimit()); ferr != nil {
			if docflow.ErrorCode(ferr) == docflow.EINVALID {
				return ferr // too large to decode: that is the reason to give
			}
			return invalidIfFailed(fmt.Errorf("image to pdf: %w; decode: %v", err, ferr))
		}
		if _, err := proc.Run(ctx, proc.Cmd{Path: bin, Args: []string{"--output", dst, flat}, Dir: dir, Timeout: c.opts.ToolTimeout}); err != nil {
			return invalidIfFailed(fmt.Errorf("image to pdf: %w", err))
		}
	}
	return moveFile(dst, out)
}

// checkImage reads only headers: the size of every frame and the number of
// frames.
func (c *Converter) checkImage(path, mt string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open image: %w", err)
	}
	defer f.Close()
	var frames [][2]int64
	switch mt {
	case "image/tiff":
		frames, err = tiffFrames(f, c.opts.MaxFrames+1)
	case "image/gif":
		frames, err = gifFrames(bufio.NewReader(f), c.opts.MaxFrames+1)
	default:
		var cfg image.Config
		cfg, _, err = image.DecodeConfig(bufio.NewReader(f))
		frames = [][2]int64{{int64(cfg.Width), int64(cfg.Height)}}
	}
	if err != nil {
		return docflow.Errorf(docflow.EINVALID, "unreadable image header: %v", err)
	}
	if len(frames) > c.opts.MaxFrames {
		return docflow.Errorf(docflow.EINVALID, "image has more than %d frames", c.opts.MaxFrames)
	}
	for i, fr := range frames {
		if fr[0] <= 0 || fr[1] <= 0 {
			return docflow.Errorf(docflow.EINVALID, "image frame %d has an empty size %dx%d", i+1, fr[0], fr[1])
		}
		if px := fr[0] * fr[1]; px > c.opts.MaxPixels {
			return docflow.Errorf(docflow.EINVALID, "image frame %d is %dx%d = %d pixels, more than the limit of %d (decompression bomb?)", i+1, fr[0], fr[1], px, c.opts.MaxPixels)
		}
	}
	return nil
}

// tiffFrames walks the IFD chain and returns each page's size, reading at
// most limit IFDs (a loop in the chain ends there too).
func tiffFrames(r io.ReadSeeker, limit int) ([][2]int64, error) {
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	var bo binary.ByteOrder
	switch string(hdr[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return nil, errors.New("not a TIFF")
	}
	if bo.Uint16(hdr[2:]) != 42 {
		return nil, errors.New("BigTIFF or not a TIFF")
	}
	off := int64(bo.Uint32(hdr[4:]))
	var out [][2]int64
	for off != 0 && len(out) < limit {
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			return nil, err
		}
		var n uint16
		if err := binary.Read(r, bo, &n); err != nil {
			return nil, fmt.Errorf("ifd at %d: %w", off, err)
		}
		entries := make([]byte, 12*int(n)+4)
		if _, err := io.ReadFull(r, entries); err != nil {
			return nil, fmt.Errorf("ifd at %d: %w", off, err)
		}
		var w, h int64
		for i := 0; i < int(n); i++ {
			e := entries[12*i:]
			tag, typ := bo.Uint16(e), bo.Uint16(e[2:])
			var v int64
			switch typ {
			case 3: // SHORT
				v = int64(bo.Uint16(e[8:]))
			case 4: // LONG
				v = int64(bo.Uint32(e[8:]))
			}
			switch tag {
			case 256:
				w = v
			case 257:
				h = v
			}
		}
		out = append(out, [2]int64{w, h})
		off = int64(bo.Uint32(entries[12*int(n):]))
	}
	return out, nil
}

// gifFrames walks the GIF block structure, skipping image data without
// decompressing it, and returns the logical screen and every frame size.
func gifFrames(r *bufio.Reader, limit int) ([][2]int64, error) {
	var hdr [13]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	if string(hdr[:3]) != "GIF" {
		return nil, errors.New("not a GIF")
	}
	screen := [2]int64{int64(binary.LittleEndian.Uint16(hdr[6:])), int64(binary.LittleEndian.Uint16(hdr[8:]))}
	out := [][2]int64{screen}
	skipTable := func(flags byte) error {
		if flags&0x80 != 0 {
			_, err := r.Discard(3 << (int(flags&7) + 1))
			return err
		}
		return nil
	}
	skipSubBlocks := func() error {
		for {
			n, err := r.ReadByte()
			if err != nil {
				return err
			}
			if n == 0 {
				return nil
			}
			if _, err := r.Discard(int(n)); err != nil {
				return err
			}
		}
	}
	if err := skipTable(hdr[10]); err != nil {
		return nil, err
	}
	for len(out) <= limit {
		b, err := r.ReadByte()
		if err != nil {
			return out, nil // truncated after some frames: img2pdf decides
		}
		switch b {
		case 0x21: // extension
			if _, err := r.ReadByte(); err != nil {
				return nil, err
			}
			if err := skipSubBlocks(); err != nil {
				return nil, err
			}
		case 0x2C: // image descriptor
			var d [9]byte
			if _, err := io.ReadFull(r, d[:]); err != nil {
				return nil, err
			}
			out = append(out, [2]int64{int64(binary.LittleEndian.Uint16(d[4:])), int64(binary.LittleEndian.Uint16(d[6:]))})
			if err := skipTable(d[8]); err != nil {
				return nil, err
			}
			if _, err := r.ReadByte(); err != nil { // LZW minimum code size
				return nil, err
			}
			if err := skipSubBlocks(); err != nil {
				return nil, err
			}
		case 0x3B:
			return out, nil
		default:
			return nil, fmt.Errorf("unknown GIF block 0x%02x", b)
		}
	}
	return out, nil
}

// flatten decodes the first frame (all frames of a GIF are not needed for
// the fallback: img2pdf handles animated GIFs itself), composes it over
// white and writes an opaque PNG. It is the one image decoder run in
// process, so it reads the header first (image.DecodeConfig: a few bytes,
// nothing allocated for pixels) and refuses, with EINVALID, an image of
// more than maxPixels pixels or whose decoding would need more memory than
// memLimit, the bound the external tools run under (proc.MemoryLimit,
// TOOL_MEMORY_LIMIT; 0 = none): the decoded image and the white canvas.
func flatten(in, out string, maxPixels, memLimit int64) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	cfg, format, err := image.DecodeConfig(bufio.NewReader(f))
	if err != nil {
		return docflow.Errorf(docflow.EINVALID, "unreadable image header: %v", err)
	}
	w, h := int64(cfg.Width), int64(cfg.Height)
	if w <= 0 || h <= 0 {
		return docflow.Errorf(docflow.EINVALID, "image has an empty size %dx%d", w, h)
	}
	if px := w * h; px > maxPixels {
		return docflow.Errorf(docflow.EINVALID, "image is %dx%d = %d pixels, more than the limit of %d (decompression bomb?)", w, h, px, maxPixels)
	}
	if need := decodeMemory(cfg, format); memLimit > 0 && need > memLimit {
		return docflow.Errorf(docflow.EINVALID, "decoding the %dx%d image would need about %s, more than the processing tools may use (TOOL_MEMORY_LIMIT, %s)",
			w, h, proc.FormatBytes(need), proc.FormatBytes(memLimit))
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	img, _, err := image.Decode(bufio.NewReader(f))
	if err != nil {
		return err
	}
	b := img.Bounds()
	dst := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(dst, dst.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	draw.Draw(dst, dst.Bounds(), img, b.Min, draw.Over)
	o, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := png.Encode(o, dst); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}

// decodeMemory estimates the bytes flatten holds for an image of cfg: the
// decoded pixels in the decoder's layout, a JPEG's coefficients (a
// progressive one keeps them all, four bytes for each of three samples),
// and the RGBA canvas.
func decodeMemory(cfg image.Config, format string) int64 {
	px := int64(cfg.Width) * int64(cfg.Height)
	per := int64(4)
	switch cfg.ColorModel {
	case color.GrayModel, color.AlphaModel:
		per = 1
	case color.Gray16Model, color.Alpha16Model:
		per = 2
	case color.RGBA64Model, color.NRGBA64Model:
		per = 8
	case color.YCbCrModel:
		per = 3
	default:
		if _, ok := cfg.ColorModel.(color.Palette); ok {
			per = 1
		}
	}
	if format == "jpeg" {
		per += 12
	}
	return px * (per + 4)
}
