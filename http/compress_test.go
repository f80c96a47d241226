package http

import (
	"bytes"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// A large embedded file (above bestUpTo) is compressed at the default
// level, decodes to what it was, and is compressed once per encoding.
func TestWriteCompressedLargeBody(t *testing.T) {
	body := []byte(strings.Repeat("function swagger(){return 'renderer'}\n", (bestUpTo/38)*2))
	for _, enc := range []string{"br", "gzip"} {
		for round := 0; round < 2; round++ {
			var c fasthttp.RequestCtx
			c.Request.Header.Set("Accept-Encoding", enc)
			c.Response.Header.SetContentType("text/javascript")
			writeCompressed(&c, "test/large.js", body)
			if got := string(c.Response.Header.ContentEncoding()); got != enc {
				t.Fatalf("Content-Encoding %q, want %q", got, enc)
			}
			plain, err := c.Response.BodyUncompressed()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(plain, body) {
				t.Fatalf("%s: the body does not decode to what was sent", enc)
			}
			if len(c.Response.Body()) > len(body)/10 {
				t.Errorf("%s: %d bytes from %d", enc, len(c.Response.Body()), len(body))
			}
		}
		if _, ok := compressedCache.Load(enc + ":test/large.js"); !ok {
			t.Errorf("%s: the compressed form is not kept", enc)
		}
	}
}
