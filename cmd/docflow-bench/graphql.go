package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The graphql section: `{ documents(limit: 100) { id originalFilename
// documentTitle } }` at 100,000 documents beside the REST list of the
// same 100 (GET /api/files?per_page=100, newest first like documents),
// each p99 measured in the same run, on the same server and data, by the
// same clients.

const (
	graphqlRecords  = 100_000
	graphqlClients  = 8
	graphqlRequests = 2000
)

const graphqlBenchQuery = `{ documents(limit: 100) { id originalFilename documentTitle } }`

func benchGraphQL(ctx context.Context, r *Report) error {
	const section = "graphql"
	dir, err := os.MkdirTemp("", "docflow-bench-graphql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	e, err := newBenchEnv(ctx, dir)
	if err != nil {
		return err
	}
	defer e.stop()
	if err := seedFiles(ctx, e.db, graphqlRecords); err != nil {
		return err
	}
	body, err := json.Marshal(map[string]string{"query": graphqlBenchQuery})
	if err != nil {
		return err
	}
	rest := func(req *fasthttp.Request) { req.SetRequestURI(e.url + "/api/files?per_page=100") }
	gql := func(req *fasthttp.Request) {
		req.SetRequestURI(e.url + "/graphql")
		req.Header.SetMethod("POST")
		req.Header.SetContentType("application/json")
		req.SetBody(body)
	}
	// REST, GraphQL, then REST again: the baseline is the better of the
	// two REST runs, so a slow first run (caches filling) does not flatter
	// GraphQL. Each run's CPU per request (this process, clients included,
	// and PostgreSQL) is printed beside it: on a busy machine the p99s
	// follow the scheduler, the CPU figures much less.
	type run struct {
		lat  []time.Duration
		cpu  intakeCPUPer
		rate float64 // requests a second
		gcs  uint32  // garbage collections in this process
	}
	measure := func(name string, prep func(*fasthttp.Request)) (run, error) {
		var cpu0 intakeCPU
		var t0 time.Time
		var ms0 runtime.MemStats
		lat, err := requestLatencies(ctx, prep, graphqlClients, graphqlRequests, func() {
			runtime.ReadMemStats(&ms0)
			cpu0 = e.cpu(ctx)
			t0 = time.Now()
		})
		if err != nil {
			return run{}, fmt.Errorf("%s: %w", name, err)
		}
		rate := graphqlRequests / time.Since(t0).Seconds()
		cpu := e.cpu(ctx).sub(cpu0).per(graphqlRequests)
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		return run{lat, cpu, rate, ms1.NumGC - ms0.NumGC}, nil
	}
	restA, err := measure("REST list", rest)
	if err != nil {
		return err
	}
	g, err := measure("GraphQL documents", gql)
	if err != nil {
		return err
	}
	restB, err := measure("REST list", rest)
	if err != nil {
		return err
	}
	for _, x := range []struct {
		name string
		r    run
	}{{"REST list, first run", restA}, {"GraphQL documents", g}, {"REST list, second run", restB}} {
		infoLine(r, section, x.name+": p50, p99, rate, GCs", fmt.Sprintf("%12.2f ms, %.2f ms, %.0f requests/s, %d GCs",
			ms(percentile(x.r.lat, 0.5)), ms(percentile(x.r.lat, 0.99)), x.r.rate, x.r.gcs))
		cpuLine(r, section, x.name+": CPU per request", x.r.cpu, nil)
	}
	base := min(percentile(restA.lat, 0.99), percentile(restB.lat, 0.99))
	gp99 := percentile(g.lat, 0.99)
	r.AtMost(section, fmt.Sprintf("GET /api/files?per_page=100 p99, %d clients, %d records", graphqlClients, graphqlRecords),
		ms(base), "ms", 20)
	r.RatioAtMost(section, fmt.Sprintf("GraphQL documents(limit: 100) p99 vs the REST list of the same 100, %d clients", graphqlClients),
		ms(gp99), ms(base), "ms", 1.5)
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// requestLatencies sends total requests prepared by prep from clients
// closed-loop clients, after a warm-up round on each (then warmed, when
// set, is called), and returns each request's latency; a status other
// than 200 or a GraphQL error fails the run. The warm-up lets every HTTP
// and database connection prepare its statements and PostgreSQL settle
// on its plan (it plans the first five executions on each connection
// afresh), so the figure is the steady state a running server gives.
func requestLatencies(ctx context.Context, prep func(*fasthttp.Request), clients, total int, warmed func()) ([]time.Duration, error) {
	client := &fasthttp.Client{MaxConnsPerHost: clients * 2, ReadTimeout: time.Minute, WriteTimeout: time.Minute}
	defer client.CloseIdleConnections()
	do := func(req *fasthttp.Request, resp *fasthttp.Response) error {
		req.Reset()
		prep(req)
		if err := client.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() != 200 {
			return fmt.Errorf("status %d: %.300s", resp.StatusCode(), resp.Body())
		}
		if b := resp.Body(); len(b) > 10 && string(b[:10]) == `{"errors":` {
			return fmt.Errorf("%.300s", b)
		}
		return nil
	}
	var warm sync.WaitGroup
	for range clients {
		warm.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for range listWarmRounds {
				do(req, resp) //nolint:errcheck
			}
		})
	}
	warm.Wait()
	if warmed != nil {
		warmed()
	}
	var next atomic.Int64
	lat := make([]time.Duration, total)
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			for {
				i := int(next.Add(1)) - 1
				if i >= total || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := do(req, resp)
				lat[i] = time.Since(t0)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return lat, firstErr
}
