package http

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// writeProgress watches a streamed response body (a download, a ZIP) as
// it goes out. fasthttp sets HTTP_WRITE_TIMEOUT once before the response,
// and a body is read (or written, for a stream writer) only after the
// previous part went out, so each part moves the write deadline on and
// gets the whole timeout again: a large file on a slow line is not cut
// off for its total time. A client must still take it at minRate bytes a
// second on average over each window: a timer checks at the end of each
// one, and a client that took less is cut off there and then, even
// while a write to it is blocked (errTooSlow, and the connection reset).
// conn is the request's connection, taken in the handler: a stream
// writer runs after it returned.
type writeProgress struct {
	conn    net.Conn
	timeout time.Duration
	minRate int64
	window  time.Duration
	// cut logs a client cut off, with the rate it took the window at.
	cut func(rate float64)

	mu       sync.Mutex
	moved    time.Time
	started  bool
	winStart time.Time
	// taken is what went out in the window; pending was handed to
	// fasthttp, which takes the next part only once it went out.
	taken, pending int64
	timer          *time.Timer
	tooSlow        bool
	done           bool
}

// errTooSlow ends a streamed body its client takes too slowly.
var errTooSlow = errors.New("the client takes the response slower than HTTP_MIN_WRITE_RATE")

func (s *Server) writeProgress(c *fasthttp.RequestCtx) *writeProgress {
	ip := s.auth.clientIP(c)
	return &writeProgress{conn: c.Conn(), timeout: s.conns.write, minRate: s.conns.minRate, window: s.conns.rateWindow,
		cut: func(rate float64) {
			s.log.Info().Str("ip", ip).Float64("bytes_per_second", rate).Int64("minimum", s.conns.minRate).
				Msg("streamed response cut off: the client takes it slower than HTTP_MIN_WRITE_RATE")
		}}
}

// next is called before each part of the body is handed out: the part
// before it went out. It starts the rate's timer with the first part and
// moves the write deadline, a few times per timeout at most (each move
// costs a timer update).
func (w *writeProgress) next() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.tooSlow {
		return errTooSlow
	}
	w.taken += w.pending
	w.pending = 0
	now := time.Now()
	if !w.started {
		w.started, w.winStart = true, now
		if w.minRate > 0 && w.window > 0 {
			w.timer = time.AfterFunc(w.window, w.tick)
		}
	}
	if w.timeout > 0 && w.conn != nil && now.Sub(w.moved) >= w.timeout/8 {
		w.moved = now
		w.conn.SetWriteDeadline(now.Add(w.timeout)) //nolint:errcheck // a closed connection fails the write itself
	}
	return nil
}

// handed counts n bytes handed out; wentOut says they already went out.
func (w *writeProgress) handed(n int, wentOut bool) {
	w.mu.Lock()
	if wentOut {
		w.taken += int64(n)
	} else {
		w.pending += int64(n)
	}
	w.mu.Unlock()
}

// tick ends a window: below the minimum rate the client is cut off, else
// the next window starts.
func (w *writeProgress) tick() {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return
	}
	now := time.Now()
	rate := float64(w.taken) / now.Sub(w.winStart).Seconds()
	if rate >= float64(w.minRate) {
		w.winStart, w.taken = now, 0
		w.timer.Reset(w.window)
		w.mu.Unlock()
		return
	}
	w.tooSlow = true
	w.mu.Unlock()
	if w.conn != nil {
		// No linger makes the close a reset, which drops what is still
		// queued for the client (a plain close would go on sending it at
		// the client's pace); a deadline now fails the write blocked on
		// it, or the next one.
		if l, ok := w.conn.(interface{ SetLinger(int) error }); ok {
			l.SetLinger(0) //nolint:errcheck // closing anyway
		}
		w.conn.SetWriteDeadline(now) //nolint:errcheck
	}
	w.cut(rate)
}

// finish stops the timer: the body went out, or failed.
func (w *writeProgress) finish() {
	w.mu.Lock()
	w.done = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
}

// reader is r as a response body stream, watched; closing it (fasthttp
// does once the body went out or failed) finishes the watch.
func (w *writeProgress) reader(r io.ReadCloser) io.ReadCloser {
	return progressStream{ReadCloser: r, w: w}
}

type progressStream struct {
	io.ReadCloser
	w *writeProgress
}

func (p progressStream) Read(b []byte) (int, error) {
	if err := p.w.next(); err != nil {
		return 0, err
	}
	n, err := p.ReadCloser.Read(b)
	p.w.handed(n, false)
	return n, err
}

func (p progressStream) Close() error {
	p.w.finish()
	return p.ReadCloser.Close()
}

// writer is dst watched; the stream writer calls finish when it returns.
func (w *writeProgress) writer(dst io.Writer) io.Writer {
	return progressWriter{dst: dst, w: w}
}

type progressWriter struct {
	dst io.Writer
	w   *writeProgress
}

func (p progressWriter) Write(b []byte) (int, error) {
	if err := p.w.next(); err != nil {
		return 0, err
	}
	n, err := p.dst.Write(b)
	p.w.handed(n, true)
	return n, err
}
