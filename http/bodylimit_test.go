package http

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// oversizeJSON is a 2 MiB JSON body, twice the default MAX_REQUEST_BODY_SIZE.
func oversizeJSON() []byte {
	return []byte(`{"name": "` + strings.Repeat("a", 2<<20) + `"}`)
}

// sendRaw writes head and then body over a fresh TCP connection, as a client
// that finishes sending before it reads would, and reads the answer. chunked
// frames the body with Transfer-Encoding: chunked.
func sendRaw(t *testing.T, base, head string, body []byte, chunked bool) (*nethttp.Response, []byte, error) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	w := bufio.NewWriterSize(conn, 64<<10)
	w.WriteString(head)
	if chunked {
		for len(body) > 0 {
			n := min(len(body), 32<<10)
			fmt.Fprintf(w, "%x\r\n", n)
			w.Write(body[:n])
			w.WriteString("\r\n")
			body = body[n:]
		}
		w.WriteString("0\r\n\r\n")
	} else {
		w.Write(body)
	}
	if err := w.Flush(); err != nil {
		return nil, nil, fmt.Errorf("write: %w", err)
	}
	return readAnswer(conn)
}

func readAnswer(conn net.Conn) (*nethttp.Response, []byte, error) {
	resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("read: %w", err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

func (e *testEnv) expect413(resp *nethttp.Response, body []byte, err error, limit string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("no answer: %v", err)
	}
	if resp.StatusCode != 413 || !strings.Contains(e.json(body)["detail"].(string), limit) {
		e.t.Fatalf("status %d body %.300s, want 413 naming %s", resp.StatusCode, body, limit)
	}
	if !resp.Close {
		e.t.Fatalf("413 without Connection: close: %v", resp.Header)
	}
}

// TestOversizedJSONBodyIs413WhateverTheClientDoes: a JSON body over
// MAX_REQUEST_BODY_SIZE gets a 413 whose detail names the limit, read by
// the client over a real connection, however the client sends the body.
func TestOversizedJSONBodyIs413WhateverTheClientDoes(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	body := oversizeJSON()
	const limit = "1048576"

	// Every JSON endpoint, the client sending all before reading.
	for _, path := range []string{"/api/api-tokens/", "/api/files/bulk-delete", "/api/process-url", "/api/routing-rules/evaluate", "/login"} {
		head := "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
		resp, out, err := sendRaw(t, fe.URL, head, body, false)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		fe.expect413(resp, out, err, limit)
	}

	// Chunked, so the size is only known while reading.
	head := "POST /api/api-tokens/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
	resp, out, err := sendRaw(t, fe.URL, head, body, true)
	fe.expect413(resp, out, err, limit)

	// Go's client, which reads the answer while it sends.
	resp, out = fe.do("POST", "/api/api-tokens/", "", body, "Content-Type", "application/json")
	fe.expect413(resp, out, nil, limit)

	// A client that asks first (Expect: 100-continue, as curl does for large
	// bodies) and sends once told to continue.
	conn0, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn0.Close()
	conn0.SetDeadline(time.Now().Add(60 * time.Second))
	head = "POST /api/api-tokens/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if _, err := conn0.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn0)
	interim, err := nethttp.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if interim.StatusCode == 100 {
		if _, err := conn0.Write(body); err != nil {
			t.Fatalf("write after 100 Continue: %v", err)
		}
		interim, err = nethttp.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	out, _ = io.ReadAll(interim.Body)
	fe.expect413(interim, out, nil, limit)

	// A client that stops sending and waits is answered all the same.
	conn, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	head = "POST /api/api-tokens/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if _, err := conn.Write(append([]byte(head), body[:100<<10]...)); err != nil {
		t.Fatal(err)
	}
	resp, out, err = readAnswer(conn)
	fe.expect413(resp, out, err, limit)

	// A declared size far past what is worth reading is answered at once.
	conn2, err := net.Dial("tcp", strings.TrimPrefix(fe.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	conn2.SetDeadline(time.Now().Add(60 * time.Second))
	head = "POST /api/api-tokens/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 5000000000\r\n\r\n"
	if _, err := conn2.Write(append([]byte(head), bytes.Repeat([]byte("a"), 8<<10)...)); err != nil {
		t.Fatal(err)
	}
	resp, out, err = readAnswer(conn2)
	fe.expect413(resp, out, err, limit)
	if !strings.Contains(string(out), "5000000000") {
		t.Fatalf("detail does not name the declared size: %s", out)
	}

	// The server still serves, and a body within the limit is fine.
	resp, out = fe.do("POST", "/api/api-tokens/", "", map[string]any{"name": "after"})
	fe.expect(resp, out, 201)
}
