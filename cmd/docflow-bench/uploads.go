package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"docflow/internal/corpus"
)

// uploadTemplate is a multipart body holding a born-digital PDF of a
// chosen size (a page of invoice text, padded as a producer's embedded
// data would), whose reference number is patched for each upload: every
// upload is a different document with text the pipeline works on.
type uploadTemplate struct {
	ctype  string
	body   []byte
	serial int // offset of the reference's 10 digits in body
}

// newUploadTemplate builds the template of client number client (its
// text differs from the other clients'); tag marks the benchmark.
func newUploadTemplate(tag string, client, size int) (*uploadTemplate, error) {
	ref := fmt.Sprintf("%s-%03d-%010d", tag, client, 0)
	lines := append(corpus.InvoiceLines(int64(client)), corpus.Lines(int64(7000+client), 20, 80)...)
	lines = append(lines, "Reference "+ref)
	ctype, body := multipartPDF(corpus.PaddedTextPDF([][]string{lines}, size))
	i := bytes.Index(body, []byte(ref))
	if i < 0 || bytes.Count(body, []byte(ref)) != 1 {
		return nil, fmt.Errorf("upload template: reference %s not found once", ref)
	}
	return &uploadTemplate{ctype: ctype, body: body, serial: i + len(ref) - 10}, nil
}

// set patches the reference number n into the template's body.
func (t *uploadTemplate) set(n int64) { copy(t.body[t.serial:], fmt.Appendf(nil, "%010d", n)) }

// uploadTemplates is one template per client.
func uploadTemplates(tag string, clients, size int) ([]*uploadTemplate, error) {
	out := make([]*uploadTemplate, clients)
	for c := range out {
		t, err := newUploadTemplate(tag, c, size)
		if err != nil {
			return nil, err
		}
		out[c] = t
	}
	return out, nil
}

// uploadRunResult is what uploadRun measured.
type uploadRunResult struct {
	Rate    float64 // uploads a second
	P50     time.Duration
	P99     time.Duration
	FileIDs []int64 // of the measured uploads and the warm-up's
}

// uploadRun posts n documents from len(tpl) closed-loop clients to url
// (POST /api/upload, 201 expected), after uploadWarmRounds unmeasured
// ones per client, with the bearer token token ("" for none).
func uploadRun(ctx context.Context, url, token string, tpl []*uploadTemplate, n int) (uploadRunResult, error) {
	clients := len(tpl)
	hc := &fasthttp.Client{MaxConnsPerHost: clients * 2, ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute}
	defer hc.CloseIdleConnections()
	var next, serial atomic.Int64
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var ids []int64
	var firstErr error
	var wg, warm sync.WaitGroup
	begin := make(chan struct{})
	for c := range clients {
		wg.Add(1)
		warm.Add(1)
		go func() {
			defer wg.Done()
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			var got struct {
				FileID int64 `json:"file_id"`
			}
			post := func() error {
				tpl[c].set(serial.Add(1))
				req.Reset()
				req.SetRequestURI(url)
				req.Header.SetMethod("POST")
				req.Header.SetContentType(tpl[c].ctype)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				req.SetBodyRaw(tpl[c].body)
				err := hc.Do(req, resp)
				if err == nil && resp.StatusCode() != 201 {
					err = fmt.Errorf("status %d: %.300s", resp.StatusCode(), resp.Body())
				}
				if err == nil {
					err = json.Unmarshal(resp.Body(), &got)
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("upload %s: %w", url, err)
					}
					return err
				}
				ids = append(ids, got.FileID)
				return nil
			}
			for range uploadWarmRounds {
				if post() != nil {
					break
				}
			}
			warm.Done()
			<-begin
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := post()
				lat[i] = time.Since(t0)
				if err != nil {
					return
				}
			}
		}()
	}
	warm.Wait()
	start := time.Now()
	close(begin)
	wg.Wait()
	el := time.Since(start)
	if firstErr != nil {
		return uploadRunResult{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return uploadRunResult{}, err
	}
	return uploadRunResult{Rate: float64(n) / el.Seconds(), P50: percentile(lat, 0.5), P99: percentile(lat, 0.99), FileIDs: ids}, nil
}

// apiJSON sends a request with a JSON body (nil for none) and decodes a
// 2xx answer into out (nil to skip it).
func apiJSON(ctx context.Context, method, url, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&nethttp.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: status %d: %.300s", method, url, resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	return nil
}
