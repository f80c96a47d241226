package http

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// dialFrom opens a TCP connection to the test server from the loopback
// address ip.
func dialFrom(t *testing.T, e *testEnv, ip string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedWithin reports whether the server ends c (EOF or reset) within d;
// whatever it answers first is returned.
func closedWithin(c net.Conn, d time.Duration) (bool, string) {
	c.SetReadDeadline(time.Now().Add(d))
	got, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, string(got)
	}
	return true, string(got)
}

// get sends one request on c and reads the status line.
func get(t *testing.T, c net.Conn, path string) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	c.SetDeadline(time.Time{})
	return strings.TrimSpace(line)
}

// TestSlowClientsAreClosedAndOthersServed: connections that send their
// headers a byte at a time are closed once HTTP_READ_HEADER_TIMEOUT has
// passed, whatever they still send, while another client is served; a
// kept-alive connection is closed after HTTP_IDLE_TIMEOUT; a JSON body that
// stalls is dropped after HTTP_BODY_TIMEOUT.
func TestSlowClientsAreClosedAndOthersServed(t *testing.T) {
	// Serial: the trickle of bytes and the 1 s server timeouts are timed against
	// each other; sharing the CPU with other tests would blur them.
	e := newTestEnv(t, map[string]string{"HTTP_READ_HEADER_TIMEOUT": "1", "HTTP_IDLE_TIMEOUT": "1", "HTTP_BODY_TIMEOUT": "1"})
	const slow = 100
	conns := make([]net.Conn, slow)
	for i := range conns {
		conns[i] = dialFrom(t, e, "127.0.0.2")
	}
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // one byte to each connection every 100 ms, never the end of the headers
		defer wg.Done()
		req := "GET /api/diagnostic/healthz/live HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + strings.Repeat("a", 1000)
		for i := 0; ; i++ {
			for _, c := range conns {
				c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				c.Write([]byte{req[i%len(req)]}) //nolint:errcheck // a closed one fails; it is checked below
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// Another client is served meanwhile.
	time.Sleep(300 * time.Millisecond)
	other := dialFrom(t, e, "127.0.0.3")
	if line := get(t, other, "/api/diagnostic/healthz/live"); !strings.Contains(line, " 200 ") {
		t.Fatalf("other client: %q", line)
	}

	// Every slow connection is closed by the header timeout (1 s), well
	// before the 8 s its trickle would otherwise last.
	var closed sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		closed.Add(1)
		go func(c net.Conn) {
			defer closed.Done()
			if ok, _ := closedWithin(c, 8*time.Second-time.Since(start)); !ok {
				mu.Lock()
				open++
				mu.Unlock()
			}
		}(c)
	}
	closed.Wait()
	if open > 0 {
		t.Fatalf("%d of %d slow connections still open after %v", open, slow, time.Since(start))
	}

	// The idle timeout closes a kept-alive connection.
	if ok, _ := closedWithin(other, 5*time.Second); !ok {
		t.Fatal("an idle kept-alive connection was not closed")
	}
	// A JSON body that stalls is dropped by the body timeout.
	c := dialFrom(t, e, "127.0.0.3")
	fmt.Fprintf(c, "POST /api/api-tokens/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":")
	if ok, _ := closedWithin(c, 5*time.Second); !ok {
		t.Fatal("a stalled body was not dropped")
	}
}

// TestConnectionCapPerAddress: past HTTP_MAX_CONNS_PER_IP open connections
// from one address the next is answered 429 and closed; other addresses
// are served, and a slot freed is taken again.
func TestConnectionCapPerAddress(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"HTTP_MAX_CONNS_PER_IP": "10"})
	held := make([]net.Conn, 10)
	for i := range held {
		held[i] = dialFrom(t, e, "127.0.0.4")
	}
	// The connections are counted once accepted; give the accept loop a moment.
	if line := get(t, held[0], "/api/diagnostic/healthz/live"); !strings.Contains(line, " 200 ") {
		t.Fatalf("held connection: %q", line)
	}
	extra := dialFrom(t, e, "127.0.0.4")
	ok, answer := closedWithin(extra, 5*time.Second)
	if !ok || !strings.HasPrefix(answer, "HTTP/1.1 429") || !strings.Contains(answer, "Too many connections") {
		t.Fatalf("11th connection: closed %v, answer %q", ok, answer)
	}
	if line := get(t, dialFrom(t, e, "127.0.0.5"), "/api/diagnostic/healthz/live"); !strings.Contains(line, " 200 ") {
		t.Fatalf("other address: %q", line)
	}
	held[1].Close()
	deadline := time.Now().Add(time.Minute)
	for {
		c := dialFrom(t, e, "127.0.0.4")
		c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprintf(c, "GET /api/diagnostic/healthz/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.Contains(line, " 200 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("freed slot not taken again: %q", line)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUploadBodyDeadlineIsByProgress: an upload that keeps arriving slowly
// is taken however long it takes in total; one that stops arriving for
// HTTP_BODY_TIMEOUT is dropped and leaves no record.
func TestUploadBodyDeadlineIsByProgress(t *testing.T) {
	// Serial: chunks 300 ms apart must arrive within the 1 s body timeout;
	// sharing the CPU with other tests would stretch the gaps.
	fe := newFilesEnv(t, map[string]string{"HTTP_BODY_TIMEOUT": "1"})
	send := func(tag string, pause time.Duration, stallAt int) net.Conn {
		// Past the 8 KB fasthttp reads before the handler, which must come
		// within the timeout from the headers' end.
		ctype, body := multipartBody("file", tag+".pdf", append(pdf(tag), strings.Repeat("x", 120_000)...))
		c := dialFrom(t, fe.testEnv, "127.0.0.6")
		fmt.Fprintf(c, "POST /api/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ctype, len(body))
		const chunks = 12
		step := (len(body) + chunks - 1) / chunks
		for i := 0; i*step < len(body); i++ {
			if i == stallAt {
				return c
			}
			c.Write(body[i*step : min(len(body), (i+1)*step)]) //nolint:errcheck
			time.Sleep(pause)
		}
		return c
	}
	// 12 chunks 300 ms apart: 3.6 s in all, never 1 s without data.
	start := time.Now()
	c := send("steady", 300*time.Millisecond, -1)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, " 201 ") {
		t.Fatalf("steady slow upload after %v: %q %v", time.Since(start), line, err)
	}
	// Half the body, then silence.
	c = send("stalled", 10*time.Millisecond, 6)
	if ok, _ := closedWithin(c, 6*time.Second); !ok {
		t.Fatal("a stalled upload was not dropped")
	}
	if n := fe.count(`SELECT count(*) FROM files WHERE original_filename='stalled.pdf'`); n != 0 {
		t.Fatalf("stalled upload recorded %d times", n)
	}
}

// TestDownloadWriteDeadlineIsByProgress: a download taken slowly is sent
// whole however long it takes in total; a client that stops reading is
// dropped after HTTP_WRITE_TIMEOUT, and the server serves others meanwhile.
func TestDownloadWriteDeadlineIsByProgress(t *testing.T) {
	// Serial: reads 100 ms apart must keep within the 1 s write timeout;
	// sharing the CPU with other tests would stretch the gaps.
	fe := newFilesEnv(t, map[string]string{"HTTP_WRITE_TIMEOUT": "1"})
	// Larger than the socket buffers of both ends can hold (4 MB to send
	// here, the reader's window kept small), so a reader that stops
	// blocks the server's writes.
	content := append(pdf("big"), strings.Repeat("x", 12<<20)...)
	id := fe.mustUpload("big.pdf", content)
	path := fmt.Sprintf("/api/files/%d/download", id)
	open := func() (net.Conn, *bufio.Reader) {
		// The receive buffer is set before connecting, so the window
		// offered never grows past it.
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.7")}, Timeout: 5 * time.Second,
			Control: func(_, _ string, rc syscall.RawConn) error {
				var serr error
				err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
				return errors.Join(err, serr)
			}}
		c, err := d.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path)
		return c, bufio.NewReaderSize(c, 16<<10)
	}

	// Taken 512 KB every 100 ms: about 2.5 s in all, never 1 s without a
	// write.
	start := time.Now()
	c, r := open()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := r.ReadString('\n')
	if err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("download: %q %v", line, err)
	}
	for {
		h, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if h == "\r\n" {
			break
		}
	}
	got := 0
	buf := make([]byte, 512<<10)
	for got < len(content) {
		n, err := io.ReadFull(r, buf[:min(len(buf), len(content)-got)])
		got += n
		if err != nil {
			t.Fatalf("slow download cut off after %d of %d bytes and %v: %v", got, len(content), time.Since(start), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Logf("the slow download took only %v", d)
	}

	// Read the status line, then nothing: the server gives up.
	c, r = open()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, " 200 ") {
		t.Fatalf("download: %q %v", line, err)
	}
	time.Sleep(3 * time.Second)
	if s := get(t, dialFrom(t, fe.testEnv, "127.0.0.8"), "/api/diagnostic/healthz/live"); !strings.Contains(s, " 200 ") {
		t.Fatalf("another client meanwhile: %q", s)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, r)
	if err == nil && n >= int64(len(content)) {
		t.Fatalf("a client that stopped reading still got the whole %d bytes", n)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the stalled download open (%d bytes read): %v", n, err)
	}
}
