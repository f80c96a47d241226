package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The mixed workload of the load and soak sections: 60 % reads of lists
// and details, 20 % search, 15 % uploads of 100 KB documents, 5 % writes
// (metadata edits, comments, shares), sent open-loop at a given rate by
// users of a multi-user docflow serve, each on their own documents.

// mixRoute is one kind of request of the mix.
type mixRoute struct {
	name   string
	weight int // of 100 requests
	want   int // status of a success
	prep   func(m *mixer, req *fasthttp.Request, user int, rng *rand.Rand, n int64)
}

// mixRoutes is the mix; the weights add up to 100.
var mixRoutes = []mixRoute{
	{"GET /api/files", 25, 200, func(m *mixer, req *fasthttp.Request, _ int, rng *rand.Rand, _ int64) {
		req.SetRequestURI(fmt.Sprintf("%s/api/files?page=%d", m.url, 1+rng.IntN(3)))
	}},
	{"GET /api/files filtered", 15, 200, func(m *mixer, req *fasthttp.Request, _ int, rng *rand.Rand, _ int64) {
		day := 1 + rng.IntN(3)
		req.SetRequestURI(fmt.Sprintf("%s/api/files?search=%s&status=completed&date_from=2020-01-%02d&date_to=2020-01-%02d&sort_by=created_at&sort_order=desc",
			m.url, mixTypes[rng.IntN(len(mixTypes))], day, day+1))
	}},
	{"GET /api/files/{id}", 20, 200, func(m *mixer, req *fasthttp.Request, user int, rng *rand.Rand, _ int64) {
		req.SetRequestURI(fmt.Sprintf("%s/api/files/%d", m.url, m.ownFile(user, rng)))
	}},
	{"GET /api/search", 20, 200, func(m *mixer, req *fasthttp.Request, _ int, rng *rand.Rand, _ int64) {
		req.SetRequestURI(m.url + "/api/search?q=" + mixQueries[rng.IntN(len(mixQueries))])
	}},
	{"POST /api/upload", 15, 201, func(m *mixer, req *fasthttp.Request, _ int, _ *rand.Rand, n int64) {
		t := m.uploads[n%int64(len(m.uploads))]
		req.SetRequestURI(m.url + "/api/upload")
		req.Header.SetMethod("POST")
		req.Header.SetContentType(t.ctype)
		req.SetBody(t.body)
		copy(req.Body()[t.serial:], fmt.Appendf(nil, "%010d", n))
	}},
	{"PATCH /api/files/{id}/metadata", 2, 200, func(m *mixer, req *fasthttp.Request, user int, rng *rand.Rand, n int64) {
		mixJSON(req, "PATCH", fmt.Sprintf("%s/api/files/%d/metadata", m.url, m.ownFile(user, rng)),
			fmt.Sprintf(`{"tags":["load","t%d"],"correspondent":"Load %d"}`, n%50, n%7))
	}},
	{"POST /api/files/{id}/comments", 2, 201, func(m *mixer, req *fasthttp.Request, user int, rng *rand.Rand, n int64) {
		mixJSON(req, "POST", fmt.Sprintf("%s/api/files/%d/comments", m.url, m.ownFile(user, rng)),
			fmt.Sprintf(`{"body":"Load comment %d: please check the total"}`, n))
	}},
	{"POST /api/files/{id}/shares", 1, 201, func(m *mixer, req *fasthttp.Request, user int, rng *rand.Rand, _ int64) {
		other := (user + 1 + rng.IntN(len(m.users)-1)) % len(m.users)
		mixJSON(req, "POST", fmt.Sprintf("%s/api/files/%d/shares", m.url, m.ownFile(user, rng)),
			fmt.Sprintf(`{"shared_with_user_id":%q,"role":"viewer"}`, m.users[other]))
	}},
}

// mixTypes and mixQueries are what the listing filters and the searches
// look for in the seeded documents (searchDocGen's types and words).
var (
	mixTypes   = []string{"invoice", "contract", "letter", "receipt", "report", "statement"}
	mixQueries = []string{"invoice", "payment+total", "customer", "contract+delivery", "account+balance", "tax", "order+number", "insurance+policy"}
)

func mixJSON(req *fasthttp.Request, method, url, body string) {
	req.SetRequestURI(url)
	req.Header.SetMethod(method)
	req.Header.SetContentType("application/json")
	req.SetBodyString(body)
}

// mixer sends the mix to one server as its users.
type mixer struct {
	url     string
	users   []string // user ids
	tokens  []string // their bearer tokens
	docs    int      // seeded documents 1..docs, document i owned by users[(i-1) % len(users)]
	uploads []*uploadTemplate
	client  *fasthttp.HostClient
	serial  atomic.Int64
	// maxInFlight bounds the requests awaiting an answer; a request due
	// while that many wait is not sent and counts as an error.
	maxInFlight int
	// uploaded, when set, hears each document an upload of the mix made
	// (the soak deletes them again, keeping the corpus its size).
	uploaded func(user int, id int64)
}

// ownFile is a seeded document of user.
func (m *mixer) ownFile(user int, rng *rand.Rand) int64 {
	per := m.docs / len(m.users)
	return int64(user + 1 + len(m.users)*rng.IntN(per))
}

// routeStats is what one route measured in a window.
type routeStats struct {
	lat      []time.Duration
	errs     int
	firstErr string
}

// mixResult is what a window of the mix measured.
type mixResult struct {
	Rate     float64       // offered, requests a second
	Duration time.Duration // of the window
	Routes   map[string]*routeStats
	Load1    float64 // the machine's load average at the end
}

// ok counts the successful requests of every route.
func (r mixResult) ok() (n int) {
	for _, s := range r.Routes {
		n += len(s.lat)
	}
	return n
}

// errors counts the failed and the unsent requests.
func (r mixResult) errors() (n int) {
	for _, s := range r.Routes {
		n += s.errs
	}
	return n
}

// achieved is the successful requests a second.
func (r mixResult) achieved() float64 { return float64(r.ok()) / r.Duration.Seconds() }

// p is the quantile q of every route's latencies together.
func (r mixResult) p(q float64) time.Duration {
	var all []time.Duration
	for _, s := range r.Routes {
		all = append(all, s.lat...)
	}
	return percentile(all, q)
}

// merge adds o's requests to r (for the figures of several windows).
func (r *mixResult) merge(o mixResult) {
	if r.Routes == nil {
		r.Routes = map[string]*routeStats{}
	}
	r.Rate = o.Rate
	r.Duration += o.Duration
	r.Load1 = o.Load1
	for name, s := range o.Routes {
		t := r.Routes[name]
		if t == nil {
			t = &routeStats{}
			r.Routes[name] = t
		}
		t.lat = append(t.lat, s.lat...)
		t.errs += s.errs
		if t.firstErr == "" {
			t.firstErr = s.firstErr
		}
	}
}

// run sends the mix at rate requests a second for d, open-loop: each
// request is due at its time whatever the earlier ones are doing, and its
// latency runs from that time (a server that falls behind is charged
// for the wait, not spared it). It returns once every request sent has
// been answered.
func (m *mixer) run(ctx context.Context, rate float64, d time.Duration, seed uint64) mixResult {
	res := mixResult{Rate: rate, Duration: d, Routes: map[string]*routeStats{}}
	for _, r := range mixRoutes {
		res.Routes[r.name] = &routeStats{}
	}
	var mu sync.Mutex
	record := func(name string, lat time.Duration, err string) {
		mu.Lock()
		defer mu.Unlock()
		s := res.Routes[name]
		if err != "" {
			s.errs++
			if s.firstErr == "" {
				s.firstErr = err
			}
			return
		}
		s.lat = append(s.lat, lat)
	}
	var inFlight atomic.Int64
	var wg sync.WaitGroup
	pick := rand.New(rand.NewPCG(seed, 1))
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for i := int64(0); ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= d || ctx.Err() != nil {
			break
		}
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		route := pickRoute(pick.IntN(100))
		user := pick.IntN(len(m.users))
		n := m.serial.Add(1)
		if inFlight.Load() >= int64(m.maxInFlight) {
			record(route.name, 0, "not sent: too many requests awaiting an answer")
			continue
		}
		inFlight.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inFlight.Add(-1)
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			rng := rand.New(rand.NewPCG(uint64(n), seed))
			route.prep(m, req, user, rng, n)
			req.Header.Set("Authorization", "Bearer "+m.tokens[user])
			err := m.client.Do(req, resp)
			lat := time.Since(due)
			switch {
			case err != nil:
				record(route.name, 0, err.Error())
			case resp.StatusCode() != route.want:
				record(route.name, 0, fmt.Sprintf("status %d: %.200s", resp.StatusCode(), resp.Body()))
			default:
				record(route.name, lat, "")
				if m.uploaded != nil && route.want == fasthttp.StatusCreated && route.name == "POST /api/upload" {
					if id := fileID(resp.Body()); id > 0 {
						m.uploaded(user, id)
					}
				}
			}
		}()
	}
	wg.Wait()
	res.Load1 = loadAvg1()
	return res
}

// fileID is the file_id of an upload's answer, 0 when it has none.
func fileID(body []byte) int64 {
	var v struct {
		FileID int64 `json:"file_id"`
	}
	if json.Unmarshal(body, &v) != nil {
		return 0
	}
	return v.FileID
}

func pickRoute(x int) mixRoute {
	for _, r := range mixRoutes {
		if x < r.weight {
			return r
		}
		x -= r.weight
	}
	return mixRoutes[len(mixRoutes)-1]
}

// routeP99s is each route's p99 in milliseconds, on one line.
func (r mixResult) routeP99s() string {
	var b strings.Builder
	for i, route := range mixRoutes {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%.0f", millis(percentile(r.Routes[route.name].lat, 0.99)))
	}
	return b.String()
}

// printMix prints a window's figures per route.
func printMix(r *Report, section, title string, res mixResult) {
	infoLine(r, section, title, fmt.Sprintf("offered %.0f/s, answered %.1f/s, p50 %.1f ms, p99 %.1f ms, %d errors, load average %.1f",
		res.Rate, res.achieved(), millis(res.p(0.5)), millis(res.p(0.99)), res.errors(), res.Load1))
	for _, route := range mixRoutes {
		s := res.Routes[route.name]
		line := fmt.Sprintf("%8d ok, p50 %7.1f ms, p99 %7.1f ms, max %7.1f ms, %d errors",
			len(s.lat), millis(percentile(s.lat, 0.5)), millis(percentile(s.lat, 0.99)), millis(slices.Max(append(s.lat, 0))), s.errs)
		if s.firstErr != "" {
			line += " (first: " + strings.ReplaceAll(s.firstErr, "\n", " ") + ")"
		}
		infoLine(r, section, "  "+route.name, line)
	}
}

// routeNames are the routes in the order of routeP99s.
func routeNames() string {
	var names []string
	for _, r := range mixRoutes {
		names = append(names, strings.Replace(r.name, " /api", " ", 1))
	}
	return strings.Join(names, ", ")
}
