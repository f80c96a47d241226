package http

import (
	"bytes"
	"strings"
	"sync"

	"github.com/valyala/fasthttp"
)

// compressMin: bodies shorter than this are sent as they are.
const compressMin = 512

// bestUpTo: bodies up to this size are compressed at the best level;
// larger ones (the API reference's 1.7 MB renderer) at the default level,
// since Brotli's best runs at about 1 MB/s and the first reader of the
// page would wait seconds for a few per cent fewer bytes.
const bestUpTo = 256 << 10

// compressedCache holds the compressed forms of embedded files, keyed by
// encoding and path: they never change while the binary runs, so each is
// compressed once.
var compressedCache sync.Map

// compressible reports whether a content type is worth compressing (text,
// scripts, styles, JSON, SVG; not images, PDFs or archives).
func compressible(contentType string) bool {
	ct := strings.ToLower(contentType)
	return strings.HasPrefix(ct, "text/") || strings.Contains(ct, "javascript") || strings.Contains(ct, "json") ||
		strings.Contains(ct, "svg") || strings.Contains(ct, "wasm")
}

// writeCompressed sets body as the response, compressed with Brotli or
// gzip when the client accepts one and the content type (already set) is
// worth it. cacheKey names an immutable body whose compressed form is kept
// ("" = compress every time).
func writeCompressed(c *fasthttp.RequestCtx, cacheKey string, body []byte) {
	h := &c.Response.Header
	if len(body) < compressMin || !compressible(string(h.ContentType())) {
		c.SetBody(body)
		return
	}
	h.Add("Vary", "Accept-Encoding")
	enc := ""
	switch {
	case c.Request.Header.HasAcceptEncoding("br"):
		enc = "br"
	case c.Request.Header.HasAcceptEncoding("gzip"):
		enc = "gzip"
	default:
		c.SetBody(body)
		return
	}
	var out []byte
	if cacheKey != "" {
		if v, ok := compressedCache.Load(enc + ":" + cacheKey); ok {
			out = v.([]byte)
		}
	}
	if out == nil {
		brLevel, gzLevel := fasthttp.CompressBrotliBestCompression, fasthttp.CompressBestCompression
		if len(body) > bestUpTo {
			brLevel, gzLevel = fasthttp.CompressBrotliDefaultCompression, fasthttp.CompressDefaultCompression
		}
		if enc == "br" {
			out = fasthttp.AppendBrotliBytesLevel(nil, body, brLevel)
		} else {
			out = fasthttp.AppendGzipBytesLevel(nil, body, gzLevel)
		}
		if cacheKey != "" {
			compressedCache.Store(enc+":"+cacheKey, bytes.Clone(out))
		}
	}
	h.Set("Content-Encoding", enc)
	c.SetBody(out)
}
