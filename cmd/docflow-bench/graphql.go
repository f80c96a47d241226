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
// same clients, the two alternating.

const (
	graphqlRecords  = 100_000
	graphqlClients  = 8
	graphqlRequests = 2000 // of each
	graphqlRounds   = 10   // alternating, graphqlRequests/graphqlRounds of each in a round
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
	// The two alternate in rounds, and each one's latencies are pooled:
	// on a shared machine a p99 of 2,000 requests is that of a few pauses
	// of the machine (each holds up every client's request at once), and
	// whichever ran while they fell lost. Alternating spreads them over
	// both alike. Each round starts with its clients' warm-up (see
	// requestLatencies), unmeasured. Beside the p99s: CPU per request
	// (this process, clients included, and PostgreSQL) and the garbage
	// collections, which a busy machine changes much less.
	type run struct {
		name string
		prep func(*fasthttp.Request)
		lat  []time.Duration
		cpu  intakeCPU
		took time.Duration
		gcs  uint32 // garbage collections in this process
	}
	restRun := &run{name: "REST list", prep: rest}
	gqlRun := &run{name: "GraphQL documents", prep: gql}
	measure := func(x *run) error {
		var cpu0 intakeCPU
		var t0 time.Time
		var ms0 runtime.MemStats
		lat, err := requestLatencies(ctx, x.prep, graphqlClients, graphqlRequests/graphqlRounds, func() {
			runtime.ReadMemStats(&ms0)
			cpu0 = e.cpu(ctx)
			t0 = time.Now()
		})
		if err != nil {
			return fmt.Errorf("%s: %w", x.name, err)
		}
		x.took += time.Since(t0)
		x.cpu = x.cpu.add(e.cpu(ctx).sub(cpu0))
		var ms1 runtime.MemStats
		runtime.ReadMemStats(&ms1)
		x.gcs += ms1.NumGC - ms0.NumGC
		x.lat = append(x.lat, lat...)
		return nil
	}
	for i := range graphqlRounds {
		order := []*run{restRun, gqlRun}
		if i%2 == 1 {
			order[0], order[1] = gqlRun, restRun
		}
		for _, x := range order {
			if err := measure(x); err != nil {
				return err
			}
		}
	}
	for _, x := range []*run{restRun, gqlRun} {
		infoLine(r, section, x.name+": p50, p99, rate, GCs", fmt.Sprintf("%12.2f ms, %.2f ms, %.0f requests/s, %d GCs",
			ms(percentile(x.lat, 0.5)), ms(percentile(x.lat, 0.99)), float64(len(x.lat))/x.took.Seconds(), x.gcs))
		cpuLine(r, section, x.name+": CPU per request", x.cpu.per(len(x.lat)), nil)
	}
	base, gp99 := percentile(restRun.lat, 0.99), percentile(gqlRun.lat, 0.99)
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
