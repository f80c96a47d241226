package browser_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"docflow"
	"docflow/internal/app/apptest"
)

// seedMetrics records a little of every kind the page charts: step
// attempts (some failing), finished documents, intake on two channels,
// requests, lag and a process sample; and one failure twelve hours ago,
// which only a range of more than twelve hours shows.
func seedMetrics(t *testing.T, a *apptest.App) {
	t.Helper()
	now := time.Now().Add(-time.Minute)
	for i := range 10 {
		ts := now.Add(-time.Duration(i) * 3 * time.Minute)
		for _, m := range []docflow.Metric{
			{Kind: docflow.MetricStep, Time: ts, StepType: "ocr", Status: docflow.StepSucceeded, Duration: 800 * time.Millisecond, QueueWait: 200 * time.Millisecond, FileID: 7},
			{Kind: docflow.MetricStep, Time: ts, StepType: "extract_text", Status: docflow.StepSucceeded, Duration: 90 * time.Millisecond, FileID: 7},
			{Kind: docflow.MetricStep, Time: ts, StepType: "ocr", Status: docflow.StepFailed, ErrorClass: "ocr_timeout", Duration: 3 * time.Second, FileID: 42},
			{Kind: docflow.MetricDocument, Time: ts, Status: "completed", Duration: 5 * time.Second, Pipeline: "standard", FileID: 7},
			{Kind: docflow.MetricIntake, Time: ts, Channel: "upload", Type: "application/pdf", Status: docflow.IntakeAccepted, Bytes: 1000},
			{Kind: docflow.MetricIntake, Time: ts, Channel: "watch", Type: "image/png", Status: docflow.IntakeAccepted, Bytes: 2000},
			{Kind: docflow.MetricRequest, Time: ts, Method: "GET", Route: "/api/files", HTTPStatus: 200, Duration: 4 * time.Millisecond},
			{Kind: docflow.MetricLag, Time: ts, Topic: "docflow.steps.ocr", Partition: 0, Lag: int64(5 + i)},
			{Kind: docflow.MetricProcess, Time: ts, Process: "test-host:1", Worker: "serve", CPU: 25, RSS: 64 << 20, Goroutines: 100},
		} {
			a.Recorder.Record(m)
		}
	}
	a.Recorder.Record(docflow.Metric{Kind: docflow.MetricStep, Time: time.Now().Add(-12 * time.Hour), StepType: "convert",
		Status: docflow.StepFailed, ErrorClass: "old_failure", Duration: time.Second, FileID: 9})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Recorder.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// analyticsCalls records the windows the page asks the overview for.
type analyticsCalls struct {
	mu    sync.Mutex
	spans []time.Duration
}

func (a *analyticsCalls) listen(ctx context.Context) {
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for e, err := range requests {
			if err != nil {
				return
			}
			if e.Request == nil || !strings.Contains(e.Request.URL, "/api/analytics/overview") {
				continue
			}
			u, err := url.Parse(e.Request.URL)
			if err != nil {
				continue
			}
			from, err1 := time.Parse(time.RFC3339, u.Query().Get("from"))
			to, err2 := time.Parse(time.RFC3339, u.Query().Get("to"))
			if err1 == nil && err2 == nil {
				a.mu.Lock()
				a.spans = append(a.spans, to.Sub(from))
				a.mu.Unlock()
			}
		}
	}()
}

func (a *analyticsCalls) last() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.spans) == 0 {
		return 0
	}
	return a.spans[len(a.spans)-1]
}

// waitLoads waits until the page has finished more than n refreshes.
func waitLoads(n int) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](fmt.Sprintf(`Number(document.body.getAttribute("data-loaded") || 0) > %d`, n),
			chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
		return err
	})
}

func loads(ctx context.Context, t *testing.T) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`Number(document.body.getAttribute("data-loaded") || 0)`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOpsPageInBrowser signs in through the form, opens /ops in headless
// Chromium over seeded metrics, and checks that the charts are drawn from
// them without a console error, that the controls are reached with the
// keyboard, that the range picker asks for its range, that the page
// refreshes itself, and that it fits a phone's screen.
func TestOpsPageInBrowser(t *testing.T) {
	// Serial: it times the page's own refresh, and Chromium beside other
	// tests would blur it.
	if _, err := fs.Stat(os.DirFS("../../http/static/vendor"), "uPlot.iife.min.js"); err != nil {
		t.Skip("the chart library is not built into http/static/vendor: make test builds it (make web, scripts/web.sh)")
	}
	ctx, cancel := headlessChromium(t)
	defer cancel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "ops password"}})
	seedMetrics(t, a)

	// The first Run starts the browser; listeners subscribe after it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var errs consoleErrors
	var calls analyticsCalls
	errs.listen(ctx)
	calls.listen(ctx)

	// Sign in through the form /ops sends us to, typing like a user.
	signIn(ctx, t, &errs, a.URL, "/ops", "admin", "ops password",
		chromedp.WaitVisible(chromedp.ID("chart-throughput")),
		waitLoads(0),
	)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/ops") {
		t.Fatalf("landed on %s", loc)
	}

	// Charts drawn from the seeded data: a canvas and points in each.
	for _, id := range []string{"chart-throughput", "chart-latency", "chart-steps", "chart-errors",
		"chart-backlog", "chart-intake", "chart-requests", "chart-workers"} {
		js := fmt.Sprintf(`(function(){var e=document.getElementById(%q);
			return !!e.querySelector("canvas") && Number(e.getAttribute("data-points"))>0})()`, id)
		if !eval[bool](ctx, t, js) {
			t.Errorf("%s: no chart drawn", id)
		}
	}
	steps := text(ctx, t, "#table-steps tbody")
	errorsText := text(ctx, t, "#table-errors tbody")
	legend := text(ctx, t, "#chart-intake")
	if !strings.Contains(steps, "ocr") || !strings.Contains(steps, "extract_text") {
		t.Errorf("steps table: %q", steps)
	}
	if !strings.Contains(errorsText, "ocr_timeout") || strings.Contains(errorsText, "old_failure") {
		t.Errorf("errors table over the last hour: %q", errorsText)
	}
	if eval[int](ctx, t, `document.querySelectorAll('#table-errors a[href^="/api/files?status=failed"]').length`) == 0 {
		t.Errorf("no error class links to the failed documents")
	}
	if !strings.Contains(legend, "upload") || !strings.Contains(legend, "watch") {
		t.Errorf("intake chart's legend: %q", legend)
	}

	// Keyboard: Tab from the top reaches each control.
	reached := map[string]bool{}
	eval[bool](ctx, t, `(document.activeElement && document.activeElement.blur(), true)`)
	for range 40 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		reached[eval[string](ctx, t, `document.activeElement.id`)] = true
	}
	for _, id := range []string{"range", "auto", "refresh"} {
		if !reached[id] {
			t.Errorf("Tab never reaches #%s (reached %v)", id, reached)
		}
	}

	// The range picker, from the keyboard: two arrow-downs from "Last hour"
	// pick "Last 24 hours"; the page asks for 24 hours and shows the old
	// failure.
	if span := calls.last(); span < 59*time.Minute || span > 61*time.Minute {
		t.Errorf("the default range asked for %v, want an hour", span)
	}
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.ID("range")), chromedp.KeyEvent(kb.ArrowDown), chromedp.KeyEvent(kb.ArrowDown)); err != nil {
		t.Fatal(err)
	}
	if picked, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("range"))); picked != "86400" {
		t.Fatalf("two arrow-downs from the last hour picked %q, want 86400 (the last 24 hours)", picked)
	}
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("table-errors").textContent.indexOf("old_failure") >= 0`,
		chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil {
		t.Fatalf("the old failure never shows after picking 24 hours: %v (%q)", err, text(ctx, t, "#table-errors tbody"))
	}
	if span := calls.last(); span < 23*time.Hour || span > 25*time.Hour {
		t.Errorf("after picking 24 hours the page asked for %v", span)
	}

	// Auto-refresh: another load within the 5 s period (and a bit).
	before := loads(ctx, t)
	start := time.Now()
	if err := chromedp.Do(ctx, waitLoads(before)); err != nil {
		t.Fatalf("no refresh on its own: %v", err)
	}
	if d := time.Since(start); d > 9*time.Second {
		t.Errorf("refreshed after %v, want about 5 s", d)
	}

	// A phone's screen: nothing wider than the viewport, charts resized.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Sleep(time.Second)); err != nil {
		t.Fatal(err)
	}
	if eval[bool](ctx, t, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Errorf("on a 390 px screen the page scrolls sideways (%v px wide)", eval[float64](ctx, t, `document.documentElement.scrollWidth`))
	}
	if w := eval[float64](ctx, t, `document.querySelector("#chart-throughput canvas").getBoundingClientRect().width`); w > 390 {
		t.Errorf("on a 390 px screen a chart is %v px wide", w)
	}

	if msgs := errs.take(); len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
}

// seriesPixels counts the pixels of a chart's canvas in the colour of its
// first series (#2456d3): what the chart drew of its data, whatever the
// axes and grid drew around it.
const seriesPixels = `(function(id){var c=document.querySelector("#"+id+" canvas");if(!c)return 0;
	var d=c.getContext("2d").getImageData(0,0,c.width,c.height).data,n=0;
	for(var i=0;i<d.length;i+=4){if(Math.abs(d[i]-0x24)<16&&Math.abs(d[i+1]-0x56)<16&&Math.abs(d[i+2]-0xd3)<16&&d[i+3]>200)n++}
	return n})`

// TestOpsChartsOfOneSample opens /ops over a few minutes of data — one
// bucket of steps and finished documents, one sample of a process — and
// checks what the page showed wrong on such data: a series of one bucket
// is drawn (as a point), every chart's time axis spans the chosen range
// (not years around the one sample), and at a phone's width nothing, the
// steps table included, is wider than its card.
func TestOpsChartsOfOneSample(t *testing.T) {
	t.Parallel()
	if _, err := fs.Stat(os.DirFS("../../http/static/vendor"), "uPlot.iife.min.js"); err != nil {
		t.Skip("the chart library is not built into http/static/vendor: make test builds it (make web, scripts/web.sh)")
	}
	ctx, cancel := headlessChromium(t)
	t.Cleanup(cancel)
	screenshotOnFailure(t, ctx)
	a := apptest.New(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "ops password"}})
	at := time.Now().Add(-2 * time.Minute)
	for _, m := range []docflow.Metric{
		{Kind: docflow.MetricStep, Time: at, StepType: "extract_metadata", Status: docflow.StepSucceeded, Duration: 700 * time.Millisecond, FileID: 1},
		{Kind: docflow.MetricDocument, Time: at, Status: "completed", Duration: 4 * time.Second, Pipeline: "standard", FileID: 1},
		{Kind: docflow.MetricProcess, Time: at, Process: "test-host:1", Worker: "serve", CPU: 10, RSS: 64 << 20, Goroutines: 50},
		// One request: the page's own requests are recorded after its
		// first load, and liveness probes are not recorded at all.
		{Kind: docflow.MetricRequest, Time: at, Method: "GET", Route: "/api/files", HTTPStatus: 200, Duration: 4 * time.Millisecond},
	} {
		a.Recorder.Record(m)
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer fcancel()
	if err := a.Recorder.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var errs consoleErrors
	errs.listen(ctx)
	signIn(ctx, t, &errs, a.URL, "/ops", "admin", "ops password",
		chromedp.WaitVisible(chromedp.ID("chart-steps")),
		waitLoads(0),
	)

	// One bucket is drawn: as a point, in the series' colour.
	for _, id := range []string{"chart-latency", "chart-steps"} {
		if n := eval[int](ctx, t, fmt.Sprintf(`Number(document.getElementById(%q).getAttribute("data-lone-points"))`, id)); n == 0 {
			t.Errorf("%s: no point drawn for its one bucket", id)
		}
		if px := eval[int](ctx, t, fmt.Sprintf(`%s(%q)`, seriesPixels, id)); px < 10 {
			t.Errorf("%s: %d pixels of its series drawn, want a visible point", id, px)
		}
	}

	// Every chart's time axis is the chosen range (the last hour), the
	// worker resources' one sample included.
	now := float64(time.Now().Unix())
	for _, id := range []string{"chart-throughput", "chart-latency", "chart-steps", "chart-requests", "chart-workers"} {
		lo := eval[float64](ctx, t, fmt.Sprintf(`Number(document.getElementById(%q).getAttribute("data-x-min"))`, id))
		hi := eval[float64](ctx, t, fmt.Sprintf(`Number(document.getElementById(%q).getAttribute("data-x-max"))`, id))
		if span := hi - lo; span < 3300 || span > 3900 || hi < now-300 || hi > now+300 {
			t.Errorf("%s: time axis from %s to %s, want the last hour", id,
				time.Unix(int64(lo), 0).UTC().Format(time.RFC3339), time.Unix(int64(hi), 0).UTC().Format(time.RFC3339))
		}
	}

	// A phone's screen: the charts shrink to it, nothing scrolls sideways,
	// and every card's content, the steps table included, fits the card.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#chart-steps canvas").getBoundingClientRect().width <= 390`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Errorf("the charts never shrank to a 390 px screen: %v", err)
	}
	if eval[bool](ctx, t, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Errorf("on a 390 px screen the page scrolls sideways (%v px wide)", eval[float64](ctx, t, `document.documentElement.scrollWidth`))
	}
	over := eval[[]string](ctx, t, `Array.prototype.slice.call(document.querySelectorAll(".grid section, .table-wrap")).filter(function(e){
		return e.scrollWidth > e.clientWidth + 1}).map(function(e){return (e.id||e.querySelector("[id]").id)+" "+e.scrollWidth+">"+e.clientWidth})`)
	if len(over) > 0 {
		t.Errorf("on a 390 px screen these overflow their card: %v", over)
	}
	if msgs := errs.take(); len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
}
