package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// loadResult is what a closed-loop load run measured.
type loadResult struct {
	Requests int64
	Errors   int64
	Duration time.Duration
	RPS      float64
	P50, P99 time.Duration
}

// load drives conns concurrent closed-loop clients against url for d,
// each sending the request prepared by prep.
func load(ctx context.Context, url string, conns int, d time.Duration, prep func(*fasthttp.Request)) (loadResult, error) {
	hc := &fasthttp.Client{MaxConnsPerHost: conns, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second}
	// Warm up the connections.
	warm := time.Now().Add(500 * time.Millisecond)
	var reqs, errs atomic.Int64
	var wg sync.WaitGroup
	lat := make([][]time.Duration, conns)
	stop := make(chan struct{})
	var measuring atomic.Bool
	var firstErr atomic.Value
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := fasthttp.AcquireRequest()
			resp := fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				select {
				case <-stop:
					return
				default:
				}
				req.Reset()
				req.SetRequestURI(url)
				if prep != nil {
					prep(req)
				}
				t0 := time.Now()
				err := hc.Do(req, resp)
				el := time.Since(t0)
				if !measuring.Load() {
					continue
				}
				if err != nil || resp.StatusCode() >= 400 {
					errs.Add(1)
					if err == nil {
						err = fmt.Errorf("status %d: %.200s", resp.StatusCode(), resp.Body())
					}
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				reqs.Add(1)
				lat[i] = append(lat[i], el)
			}
		}()
	}
	select {
	case <-time.After(time.Until(warm)):
	case <-ctx.Done():
	}
	measuring.Store(true)
	start := time.Now()
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	measuring.Store(false)
	el := time.Since(start)
	close(stop)
	wg.Wait()
	// The next load's connections count alone against the server's cap
	// of connections per address.
	hc.CloseIdleConnections()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	res := loadResult{Requests: reqs.Load(), Errors: errs.Load(), Duration: el, RPS: float64(reqs.Load()) / el.Seconds()}
	if len(all) > 0 {
		res.P50 = all[len(all)/2]
		res.P99 = all[len(all)*99/100]
	}
	if e, ok := firstErr.Load().(error); ok && res.Errors > res.Requests/100 {
		return res, fmt.Errorf("%d of %d requests failed, first: %w", res.Errors, res.Errors+res.Requests, e)
	}
	return res, nil
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// getLoad sends total GETs from clients goroutines and returns the p99;
// warmed is called once connections and caches are warm, before the
// measured requests.
// Like uploadLoad it uses a fasthttp client, the cheapest load generator
// at hand, since it shares the cores with the server.
// listWarmRounds is the requests each client sends before the measurement.
const listWarmRounds = 10

func getLoad(ctx context.Context, url string, clients, total int, warmed func()) (time.Duration, error) {
	return getLoadAs(ctx, url, "", clients, total, warmed)
}

// getLoadAs is getLoad with the bearer token token ("" for none).
func getLoadAs(ctx context.Context, url, token string, clients, total int, warmed func()) (time.Duration, error) {
	lat, err := getLatencies(ctx, url, token, clients, total, warmed)
	return percentile(lat, 0.99), err
}

// getLatencies is getLoadAs returning every request's latency.
func getLatencies(ctx context.Context, url, token string, clients, total int, warmed func()) ([]time.Duration, error) {
	return requestLatencies(ctx, func(req *fasthttp.Request) {
		req.SetRequestURI(url)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
	}, clients, total, warmed)
}
