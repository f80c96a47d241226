package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"docflow/internal/app/apptest"
	"docflow/storage/blob"
	"docflow/storage/postgres"
)

// intakeBenchConfig sizes the intake benchmark; the figures are
// for the defaults.
type intakeBenchConfig struct {
	Uploads       int   // uploads per throughput run
	UploadClients int   // concurrent uploaders
	UploadSize    int   // bytes per PDF
	BigUpload     int64 // bytes of the large upload (RSS figure)
	ListRecords   int   // file records for the listing figures
	ListClients   int
	ListRequests  int // per listing kind
	BulkFiles     int // files in the bulk download
}

func defaultIntakeBenchConfig() intakeBenchConfig {
	return intakeBenchConfig{Uploads: 4000, UploadClients: 32, UploadSize: 100 << 10, BigUpload: 1 << 30,
		ListRecords: 100_000, ListClients: 16, ListRequests: 2000, BulkFiles: 1000}
}

// benchIntake measures uploads, the 1 GiB upload's memory, the file listing
// at 100,000 records and the bulk download's first byte, on an in-process
// server with a throwaway PostgreSQL database and a real blob store.
func benchIntake(ctx context.Context, r *Report) error {
	return benchIntakeWith(ctx, r, defaultIntakeBenchConfig())
}

// benchEnv is the server under measurement: a docflow api process built by
// internal/app's test twin on a throwaway database, its WORKDIR under the
// bench's directory.
type benchEnv struct {
	db    *postgres.DB
	files *postgres.FileStore
	blobs *blob.Local
	url   string
	stop  func()
}

func newBenchEnv(ctx context.Context, dir string) (*benchEnv, error) {
	log := zerolog.Nop()
	// Blobs are fsynced as in production. NOTE: no relay: the figures are
	// those of intake and the listing, as measured before the API was built
	// by internal/app.
	a, err := apptest.Start(ctx, apptest.Options{Role: "api", Log: &log, Workdir: dir, NoRelay: true, ProductionTimings: true,
		Env: map[string]string{"RATE_LIMITING_ENABLED": "false", "MAX_UPLOAD_SIZE": strconv.FormatInt(2<<30, 10)}})
	if err != nil {
		return nil, fmt.Errorf("intake bench: %w", err)
	}
	return &benchEnv{db: a.DB, files: a.Files, blobs: a.Blobs, url: a.URL, stop: a.Close}, nil
}

func benchIntakeWith(ctx context.Context, r *Report, cfg intakeBenchConfig) error {
	dir, err := os.MkdirTemp("", "docflow-bench-intake-")
	if err != nil {
		return fmt.Errorf("intake bench: %w", err)
	}
	defer os.RemoveAll(dir)
	e, err := newBenchEnv(ctx, dir)
	if err != nil {
		return err
	}
	defer e.stop()
	const section = "intake"

	// 1. Uploads against a bare fasthttp handler doing the minimum: stream
	// the same multipart body to a file while hashing it.
	baseURL, stopBase, err := bareUploadServer(filepath.Join(dir, "bare"))
	if err != nil {
		return err
	}
	defer stopBase()
	client := &nethttp.Client{Timeout: 5 * time.Minute, Transport: &nethttp.Transport{MaxIdleConnsPerHost: cfg.UploadClients * 2}}
	var cpu0 intakeCPU
	// Whatever else waits to be written (and the warm-up's files) is
	// written before the measurement, so the flush below is the baseline's.
	baseRate, _, err := uploadLoad(ctx, baseURL+"/upload", cfg, "base", 201, func() { syscall.Sync(); cpu0 = e.cpu(ctx) })
	if err != nil {
		return err
	}
	baseCPU := e.cpu(ctx).sub(cpu0).per(cfg.Uploads)
	// The bare handler answers once its files are in the page cache; its
	// uploads are on disk only once that is written out. Docflow answers
	// once each upload is on disk, so the baseline's time runs until its
	// data is too.
	//
	// NOTE: without the flush the baseline's rate depended on the state of
	// the filesystem more than on anything measured: from 3,100 to 8,900
	// uploads/s on the same machine (0.57 to 0.21 ms of CPU per upload),
	// lowest after many files had just been deleted, against 1,550 to
	// 1,900/s for docflow. The rate without the flush is still printed.
	t0 := time.Now()
	syscall.Sync()
	flush := time.Since(t0)
	cacheRate := baseRate
	baseRate = float64(cfg.Uploads) / (float64(cfg.Uploads)/baseRate + flush.Seconds())
	rate, p99, err := uploadLoad(ctx, e.url+"/api/upload", cfg, "df", 201, func() { cpu0 = e.cpu(ctx) })
	if err != nil {
		return err
	}
	upCPU := e.cpu(ctx).sub(cpu0).per(cfg.Uploads)
	r.AtLeast(section, fmt.Sprintf("POST /api/upload 100 KB PDFs, %d clients", cfg.UploadClients), rate, "/s", 1000)
	r.AtMost(section, "POST /api/upload p99", float64(p99.Microseconds())/1000, "ms", 50)
	r.Ratio(section, "POST /api/upload vs bare fasthttp stream+SHA-256", rate, baseRate, "/s", 0.3)
	infoLine(r, section, "  bare handler: page cache, then written out", fmt.Sprintf("%12.0f /s, then %.0f ms: %.0f /s to disk",
		cacheRate, float64(flush.Microseconds())/1000, baseRate))
	// CPU per upload depends much less than wall-clock figures on what else
	// the machine runs; the process figure includes the in-process clients,
	// as the baseline's does. NOTE: the store starts empty, so nearly every
	// upload also creates its shard directory, which a store in use has.
	cpuLine(r, section, "POST /api/upload CPU per upload", upCPU, &baseCPU)

	// 2. Memory of one large upload.
	growth, err := bigUploadRSS(ctx, client, e.url+"/api/upload", cfg.BigUpload)
	if err != nil {
		return err
	}
	r.AtMost(section, fmt.Sprintf("RSS growth during a %d MiB upload", cfg.BigUpload>>20), float64(growth)/(1<<20), "MiB", 64)

	// 3. Listing at 100,000 records.
	if err := seedFiles(ctx, e.db, cfg.ListRecords); err != nil {
		return err
	}
	lastPage := cfg.ListRecords / 25
	kinds := []struct{ name, q string }{
		{"GET /api/files default, page 1", "/api/files"},
		{"GET /api/files search+status+date filter", "/api/files?search=invoice-12&status=completed&date_from=2024-01-01&date_to=2024-12-31"},
		{fmt.Sprintf("GET /api/files page %d", lastPage), "/api/files?page=" + strconv.Itoa(lastPage)},
	}
	var p99s []time.Duration
	for _, k := range kinds {
		var cpu0 intakeCPU
		p99, err := getLoad(ctx, e.url+k.q, cfg.ListClients, cfg.ListRequests, func() { cpu0 = e.cpu(ctx) })
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		c := e.cpu(ctx).sub(cpu0).per(cfg.ListRequests)
		p99s = append(p99s, p99)
		r.AtMost(section, fmt.Sprintf("%s p99, %d clients", k.name, cfg.ListClients), float64(p99.Microseconds())/1000, "ms", 10)
		cpuLine(r, section, "  CPU per request", c, nil)
	}
	// Page 1 over the deep page: 1.0 means the deep page is as fast.
	r.Ratio(section, fmt.Sprintf("GET /api/files page 1 p99 / page %d p99", lastPage),
		float64(p99s[0].Microseconds())/1000, float64(p99s[2].Microseconds())/1000, "ms", 0.5)

	// 4. Bulk download: first byte of a 1,000-file ZIP.
	ttfb, err := bulkTTFB(ctx, e, client, cfg.BulkFiles)
	if err != nil {
		return err
	}
	r.AtMost(section, fmt.Sprintf("bulk download of %d files, first byte", cfg.BulkFiles), float64(ttfb.Microseconds())/1000, "ms", 200)
	return nil
}

// intakeCPU are CPU times of this process and of the bench database's
// PostgreSQL backends (per pid, so a phase counts only what it used).
type intakeCPU struct {
	proc time.Duration
	pg   map[int]time.Duration
}

// intakeCPUPer is CPU milliseconds per request.
type intakeCPUPer struct{ proc, pg float64 }

// infoLine prints a line without a target (not counted among the
// report's figures).
func infoLine(r *Report, section, name, value string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "%-10s %-58s %s\n", section, name, value)
}

// cpuLine prints a CPU figure without a target (it is not counted among
// the report's figures): it explains wall-clock figures taken on a busy
// machine.
func cpuLine(r *Report, section, name string, c intakeCPUPer, base *intakeCPUPer) {
	v := fmt.Sprintf("%12.3f ms process + %.3f ms PostgreSQL", c.proc, c.pg)
	if base != nil {
		v += fmt.Sprintf(" (bare handler: %.3f ms process)", base.proc)
	}
	infoLine(r, section, name, v)
}

func (e *benchEnv) cpu(ctx context.Context) intakeCPU {
	t := intakeCPU{proc: processCPU(), pg: map[int]time.Duration{}}
	pids, err := e.db.BackendPIDs(ctx)
	if err != nil {
		return t
	}
	for _, pid := range pids {
		if d, ok := pidCPU(int(pid)); ok {
			t.pg[int(pid)] = d
		}
	}
	return t
}

func (t intakeCPU) sub(before intakeCPU) intakeCPU {
	out := intakeCPU{proc: t.proc - before.proc, pg: map[int]time.Duration{}}
	for pid, d := range t.pg {
		out.pg[pid] = d - before.pg[pid]
	}
	return out
}

// add sums two measurements.
func (t intakeCPU) add(o intakeCPU) intakeCPU {
	out := intakeCPU{proc: t.proc + o.proc, pg: map[int]time.Duration{}}
	for pid, d := range t.pg {
		out.pg[pid] += d
	}
	for pid, d := range o.pg {
		out.pg[pid] += d
	}
	return out
}

func (t intakeCPU) per(n int) intakeCPUPer {
	var pg time.Duration
	for _, d := range t.pg {
		pg += d
	}
	return intakeCPUPer{proc: t.proc.Seconds() * 1000 / float64(n), pg: pg.Seconds() * 1000 / float64(n)}
}

// benchPDF is a PDF of size bytes, unique per (tag, i) so deduplication
// never short-cuts the work.
func benchPDF(size int, tag string, i int) []byte {
	b := make([]byte, size)
	// NOTE: the filler is copied from a pattern made once, so that the
	// clients, which share the process and its cores with the server,
	// spend as little as possible making bodies.
	for j := copy(b, pdfFiller); j < size; j += copy(b[j:], pdfFiller) {
	}
	copy(b, fmt.Sprintf("%%PDF-1.4\n%% %s-%08d\n", tag, i))
	return b
}

// pdfFiller is benchPDF's filler: byte j is 'a'+j%26.
var pdfFiller = func() []byte {
	b := make([]byte, 26*1024)
	for j := range b {
		b[j] = byte('a' + j%26)
	}
	return b
}()

func multipartPDF(content []byte) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("file", "bench.pdf")
	w.Write(content)
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// uploadLoad posts cfg.Uploads PDFs from cfg.UploadClients clients and
// returns the rate and the p99 latency. Each client first posts
// uploadWarmRounds PDFs that are not measured; warmed is called once all
// have, before the measured uploads.
//
// NOTE: like the listing's warm-up (getLoad), this measures the steady
// state of a running server: without it the first uploads of each client
// paid for opening the database connections and preparing statements,
// and made half of the p99.
//
// NOTE: the clients share the process and its two cores with the server,
// so they are made cheap: a fasthttp client, and each client's multipart
// body built once and patched in place (a fixed-width serial number keeps
// every PDF distinct), so the figures measure the server rather than the
// load generator's allocations.
func uploadLoad(ctx context.Context, url string, cfg intakeBenchConfig, tag string, want int, warmed func()) (float64, time.Duration, error) {
	client := &fasthttp.Client{MaxConnsPerHost: cfg.UploadClients * 2, ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	lat := make([]time.Duration, cfg.Uploads)
	var firstErr error
	var once sync.Once
	var wg, warm sync.WaitGroup
	begin := make(chan struct{})
	var start time.Time
	for c := 0; c < cfg.UploadClients; c++ {
		wg.Add(1)
		warm.Add(1)
		go func() {
			defer wg.Done()
			ctype, body := multipartPDF(benchPDF(cfg.UploadSize, tag, 0))
			serial := bytes.Index(body, []byte(fmt.Sprintf("%% %s-%08d\n", tag, 0))) + len(tag) + 3
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			// post sends PDF number i (every number makes distinct content).
			post := func(i int) error {
				copy(body[serial:], fmt.Appendf(nil, "%08d", i))
				req.Reset()
				req.SetRequestURI(url)
				req.Header.SetMethod("POST")
				req.Header.SetContentType(ctype)
				req.SetBodyRaw(body)
				err := client.Do(req, resp)
				if err == nil && resp.StatusCode() != want {
					err = fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				}
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("upload %s: %w", url, err) })
				}
				return err
			}
			for j := 0; j < uploadWarmRounds; j++ {
				if post(cfg.Uploads+c*uploadWarmRounds+j) != nil {
					break
				}
			}
			warm.Done()
			<-begin
			for {
				i := int(next.Add(1)) - 1
				if i >= cfg.Uploads || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := post(i)
				lat[i] = time.Since(t0)
				if err != nil {
					return
				}
			}
		}()
	}
	warm.Wait()
	if warmed != nil {
		warmed()
	}
	start = time.Now()
	close(begin)
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	return float64(cfg.Uploads) / time.Since(start).Seconds(), percentile(lat, 0.99), nil
}

// uploadWarmRounds is the uploads each client sends before the measurement.
const uploadWarmRounds = 5

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// bareUploadServer is the baseline: fasthttp with a streamed body, the
// multipart part copied to a new file through SHA-256, nothing else.
func bareUploadServer(dir string) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", nil, err
	}
	var n atomic.Int64
	srv := &fasthttp.Server{StreamRequestBody: true, DisablePreParseMultipartForm: true, MaxRequestBodySize: 64 << 10,
		Handler: func(c *fasthttp.RequestCtx) {
			_, params, _ := mimeParams(string(c.Request.Header.ContentType()))
			mr := multipart.NewReader(c.RequestBodyStream(), params)
			p, err := mr.NextPart()
			if err != nil {
				c.SetStatusCode(400)
				return
			}
			f, err := os.Create(filepath.Join(dir, strconv.FormatInt(n.Add(1), 10)))
			if err != nil {
				c.SetStatusCode(500)
				return
			}
			h := sha256.New()
			_, err = io.Copy(io.MultiWriter(f, h), p)
			f.Close()
			if err != nil {
				c.SetStatusCode(400)
				return
			}
			c.SetStatusCode(201)
			fmt.Fprintf(c, `{"sha256":"%x"}`, h.Sum(nil))
		}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go srv.Serve(ln)                                                      //nolint:errcheck
	return "http://" + ln.Addr().String(), func() { srv.Shutdown() }, nil //nolint:errcheck
}

func mimeParams(ct string) (string, string, error) {
	_, rest, ok := strings.Cut(ct, "boundary=")
	if !ok {
		return "", "", fmt.Errorf("no boundary")
	}
	return "", strings.Trim(rest, `"`), nil
}

// rss reads the resident set size of this process.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// patternReader yields n bytes of a PDF without holding them.
type patternReader struct {
	n, off int64
	head   []byte
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n-p.off {
		b = b[:p.n-p.off]
	}
	for i := range b {
		pos := p.off + int64(i)
		if pos < int64(len(p.head)) {
			b[i] = p.head[pos]
		} else {
			b[i] = byte('a' + pos%26)
		}
	}
	p.off += int64(len(b))
	return len(b), nil
}

// bigUploadRSS streams one upload of size bytes (client and server in this
// process) and returns the peak RSS growth over the start.
func bigUploadRSS(ctx context.Context, client *nethttp.Client, url string, size int64) (int64, error) {
	runtime.GC()
	base := rss()
	var peak atomic.Int64
	peak.Store(base)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if v := rss(); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		w, _ := mw.CreateFormFile("file", "big.pdf")
		var salt [8]byte
		rand.Read(salt[:]) //nolint:errcheck
		_, err := io.Copy(w, &patternReader{n: size, head: []byte(fmt.Sprintf("%%PDF-1.4\n%% big %x\n", salt))})
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := nethttp.NewRequestWithContext(ctx, "POST", url, pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := client.Do(req)
	close(done)
	if err != nil {
		return 0, fmt.Errorf("big upload: %w", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 201 {
		return 0, fmt.Errorf("big upload: %d %s", resp.StatusCode, body)
	}
	return peak.Load() - base, nil
}

// seedFiles inserts n file records in one statement, spread over 2024 and
// 2025, with the statuses and names the filters look for, then vacuums so
// the listing's index-only scans see all-visible pages.
func seedFiles(ctx context.Context, db *postgres.DB, n int) error {
	err := db.SeedFiles(ctx, n)
	if err != nil {
		return fmt.Errorf("seed files: %w", err)
	}
	// Statistics and visibility for every table the setup wrote (the
	// uploads' files, runs and outbox rows too), as autovacuum would have
	// them on a database in service.
	if err := db.VacuumAnalyze(ctx); err != nil {
		return fmt.Errorf("seed files: vacuum: %w", err)
	}
	// The seeding's and the uploads' writes are written out now rather
	// than during the listings: the figures are the listing's, not those
	// of writing back 100,000 new rows. (A checkpoint needs a superuser or
	// pg_checkpoint; without it the write-back is left to PostgreSQL.)
	db.Checkpoint(ctx) //nolint:errcheck
	syscall.Sync()
	return nil
}

// bulkTTFB stores n files of 20 KB and measures the first byte of their ZIP.
func bulkTTFB(ctx context.Context, e *benchEnv, client *nethttp.Client, n int) (time.Duration, error) {
	ids := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		info, err := e.blobs.Put(ctx, bytes.NewReader(benchPDF(20<<10, "bulk", i)), 0)
		if err != nil {
			return 0, err
		}
		id, err := e.db.InsertBenchFile(ctx, info.Key, fmt.Sprintf("bulk-%d.pdf", i), info.Key+".pdf", info.Size)
		if err != nil {
			return 0, fmt.Errorf("bulk seed: %w", err)
		}
		ids = append(ids, id)
	}
	body := "[" + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(ids)), ","), "[]") + "]"
	var best time.Duration
	for round := 0; round < 3; round++ {
		t0 := time.Now()
		resp, err := client.Post(e.url+"/api/files/bulk-download", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, fmt.Errorf("bulk download: %w", err)
		}
		one := make([]byte, 1)
		_, err = io.ReadFull(resp.Body, one)
		ttfb := time.Since(t0)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			return 0, fmt.Errorf("bulk download: status %d: %v", resp.StatusCode, err)
		}
		// The worst of three runs is reported.
		best = max(best, ttfb)
	}
	return best, nil
}
