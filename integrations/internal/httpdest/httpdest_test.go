package httpdest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"docflow"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"30":                            30 * time.Second,
		"-4":                            0,
		"soon":                          0,
		"999999":                        24 * time.Hour,
		"Sun, 29 Nov 2026 10:01:00 GMT": time.Minute,
		"Sun, 29 Nov 2026 09:00:00 GMT": 0,
	} {
		if got := RetryAfter(http.Header{"Retry-After": {v}}, now); got != want {
			t.Errorf("%q: %v, want %v", v, got, want)
		}
	}
}

func TestFail(t *testing.T) {
	for _, tc := range []struct {
		status int
		wait   time.Duration
		want   docflow.DestinationFailure
	}{
		{401, 0, docflow.DestAuth}, {403, 0, docflow.DestForbidden}, {429, 0, docflow.DestRateLimited},
		{503, time.Second, docflow.DestRateLimited}, {503, 0, docflow.DestUnavailable}, {500, 0, docflow.DestUnavailable},
		{408, 0, docflow.DestUnavailable}, {507, 0, docflow.DestFull}, {400, 0, docflow.DestInvalid}, {413, 0, docflow.DestInvalid},
	} {
		if got := Fail("Box", Answer{Status: tc.status, RetryAfter: tc.wait}, ""); got.Class != tc.want {
			t.Errorf("%d: %s, want %s", tc.status, got.Class, tc.want)
		}
	}
	e := Fail("Box", Answer{Status: 429, Code: "slow_down", RetryAfter: 5 * time.Second}, "")
	if e.Reason != "Box answered HTTP 429 (slow_down)" || e.RetryAfter != 5*time.Second {
		t.Fatalf("%+v", e)
	}
	if e := Fail("Box", Answer{Status: 403, Code: "quota", RetryAfter: time.Second}, docflow.DestFull); e.Class != docflow.DestFull || e.RetryAfter != 0 {
		t.Fatalf("override: %+v", e)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"Invoice ACME.pdf":      "Invoice ACME.pdf",
		`a/b\c:d*e?f"g<h>i|j`:   "a_b_c_d_e_f_g_h_i_j",
		"trailing dots. . ":     "trailing dots",
		"tab\there":             "tab_here",
		" .. ":                  "document",
		"日本語の請求書.pdf":           "日本語の請求書.pdf",
		"dots.in.the.name..pdf": "dots.in.the.name..pdf",
	} {
		if got := SafeName(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// A body that trickles is read until the context ends.
type trickle struct{}

func (trickle) Read(p []byte) (int, error) {
	time.Sleep(5 * time.Millisecond)
	p[0] = 'x'
	return 1, nil
}

func TestReadChunk(t *testing.T) {
	buf := make([]byte, 8)
	n, last, err := ReadChunk(context.Background(), strings.NewReader("abc"), buf)
	if n != 3 || !last || err != nil {
		t.Fatalf("short: %d %v %v", n, last, err)
	}
	n, last, err = ReadChunk(context.Background(), bytes.NewReader(make([]byte, 8)), buf)
	if n != 8 || last || err != nil {
		t.Fatalf("exact: %d %v %v", n, last, err)
	}
	if end, err := Ends(context.Background(), strings.NewReader("")); !end || err != nil {
		t.Fatalf("ends: %v %v", end, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err = ReadChunk(ctx, trickle{}, make([]byte, 1<<20))
	// The trickle would last over an hour: a minute bounds a read that
	// ignored its context, however slow the machine.
	if err == nil || time.Since(start) > time.Minute {
		t.Fatalf("trickle: %v after %v", err, time.Since(start))
	}
	if _, _, err := ReadChunk(context.Background(), io.MultiReader(strings.NewReader("a"), errReader{}), buf); err == nil {
		t.Fatal("read error lost")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, io.ErrClosedPipe }
