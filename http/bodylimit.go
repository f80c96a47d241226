package http

import (
	"errors"
	"io"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"docflow"
)

// Bounds of reading an oversized body only to throw it away.
const (
	// oversizeDrainMax is how much of an oversized body is read and thrown
	// away so the client can finish sending and then read the 413. A body
	// declared larger than this is answered at once instead.
	oversizeDrainMax = 16 << 20
	// oversizeDrainIdle is how long the drain waits for the next bytes: a
	// client that stopped sending to wait for the answer gets it after this.
	oversizeDrainIdle = 2 * time.Second
	// oversizeDrainTotal bounds the whole drain, however slowly bytes come.
	oversizeDrainTotal = 20 * time.Second
)

// refuseOversized answers a JSON body larger than limit. Closing a
// connection while the client is still sending makes the kernel reset it,
// and a reset discards the answer before the client reads it; so what is
// left of the body is read and thrown away first, up to oversizeDrainMax
// and within the drain's time bounds, and then the connection is closed
// after the 413. declared is the Content-Length (-1 when chunked) and read
// how much of the body was already consumed.
func (s *Server) refuseOversized(c *fasthttp.RequestCtx, limit, declared, read int64) error {
	c.SetConnectionClose()
	if declared >= 0 {
		if declared-read <= oversizeDrainMax {
			s.drainBody(c, declared-read)
		}
		return docflow.Errorf(docflow.ETOOLARGE, "Request body of %d bytes exceeds the maximum of %d bytes", declared, limit)
	}
	s.drainBody(c, oversizeDrainMax)
	return docflow.Errorf(docflow.ETOOLARGE, "Request body exceeds the maximum of %d bytes", limit)
}

// drainRefusedUpload reads what is left of an upload refused as too
// large, as refuseOversized does for JSON bodies, so that a client still
// sending reads the 413 rather than a reset: a chunked body up to
// oversizeDrainMax, a declared one only when it is no larger than that
// (a declared 5 GB is answered at once, its bytes never read).
func (s *Server) drainRefusedUpload(c *fasthttp.RequestCtx) {
	cl := int64(c.Request.Header.ContentLength())
	if cl > oversizeDrainMax {
		return
	}
	s.drainBody(c, oversizeDrainMax)
}

// drainBody reads up to max bytes of the request body stream and drops
// them. It stops at the end of the body, after oversizeDrainIdle without
// data, or after oversizeDrainTotal.
func (s *Server) drainBody(c *fasthttp.RequestCtx, max int64) {
	stream := c.RequestBodyStream()
	if stream == nil || max <= 0 {
		return
	}
	end := time.Now().Add(oversizeDrainTotal)
	buf := make([]byte, 32<<10)
	var n int64
	for n < max {
		deadline := time.Now().Add(oversizeDrainIdle)
		if deadline.After(end) {
			deadline = end
		}
		// NOTE: a deadline the handler sets is cleared by fasthttp once the
		// response is written, so it does not outlive this request.
		if err := c.SetReadDeadline(deadline); err != nil {
			return
		}
		k, err := stream.Read(buf[:min(int64(len(buf)), max-n)])
		n += int64(k)
		if err != nil {
			var ne net.Error
			if !errors.Is(err, io.EOF) && !(errors.As(err, &ne) && ne.Timeout()) {
				s.log.Debug().Err(err).Str("request_id", RequestID(c)).Msg("drain oversized body")
			}
			return
		}
	}
}
