package api_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	nethttp "net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"docflow/internal/app/apptest"
)

// TestSlowDownloadIsCutOff: a client taking a 50 MB download far below
// HTTP_MIN_WRITE_RATE (averaged over HTTP_MIN_WRITE_RATE_WINDOW) is cut
// off after a few windows, well before HTTP_WRITE_TIMEOUT would end it,
// while a client taking it at full speed gets all of it. (The rate is set
// high and the window short so that this takes seconds, not minutes.)
func TestSlowDownloadIsCutOff(t *testing.T) {
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"HTTP_MIN_WRITE_RATE": "1048576", "HTTP_MIN_WRITE_RATE_WINDOW": "2", "HTTP_WRITE_TIMEOUT": "60"}})
	const size = 50 << 20
	line := "a line of a large text file, read slowly\n"
	content := strings.Repeat(line, size/len(line)+1)[:size-1] + "\n"

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, _ := mw.CreateFormFile("file", "large.txt")
		io.WriteString(w, content) //nolint:errcheck
		pw.CloseWithError(mw.Close())
	}()
	resp, err := nethttp.Post(a.URL+"/api/upload", mw.FormDataContentType(), pr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var up struct {
		FileID int64 `json:"file_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &up) != nil || up.FileID == 0 {
		t.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	path := fmt.Sprintf("/api/files/%d/download", up.FileID)

	// At full speed: the whole file.
	start := time.Now()
	resp, err = nethttp.Get(a.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || n != size {
		t.Fatalf("fast download: %d, %d of %d bytes, %v", resp.StatusCode, n, size, err)
	}
	t.Logf("fast download of %d MB in %v", size>>20, time.Since(start))

	// About 80 KB a second, through a small receive window (set before
	// connecting, so the window offered never grows past it).
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10) })
		return errors.Join(err, serr)
	}}
	c, err := d.Dial("tcp", strings.TrimPrefix(a.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path)
	r := bufio.NewReaderSize(c, 8<<10)
	start = time.Now()
	const limit = 30 * time.Second
	c.SetReadDeadline(start.Add(limit)) //nolint:errcheck
	status, err := r.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		t.Fatalf("slow download: %q %v", status, err)
	}
	var got int64
	buf := make([]byte, 8<<10)
	for {
		n, err := r.Read(buf)
		got += int64(n)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("a reader at about 80 KB/s still held the download after %v (%d of %d bytes)", limit, got, size)
			}
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got >= size {
		t.Fatalf("the slow reader got the whole file (%d bytes) in %v", got, time.Since(start))
	}
	t.Logf("slow reader cut off after %v and %d KB", time.Since(start).Round(time.Millisecond), got>>10)
}
