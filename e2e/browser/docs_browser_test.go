package browser_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"docflow/internal/app/apptest"
)

// TestAPIReferenceInBrowser opens /docs as a reader does: the interactive
// reference renders every operation of /openapi.json, loads nothing from
// outside this server (it works offline), reports no error, and an
// operation opened shows its parameters and its documented answers.
func TestAPIReferenceInBrowser(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("../../http/static/vendor/swagger-ui-bundle.js"); err != nil {
		t.Skip("the API reference's assets are not built into http/static/vendor: make test builds them (make web, scripts/web.sh)")
	}
	// Four minutes: Swagger UI parses and lays out 200 operations, slow
	// on 2 busy cores.
	ctx, cancel := headlessChromiumFor(t, 4*time.Minute)
	t.Cleanup(cancel)
	screenshotOnFailure(t, ctx)
	a := apptest.New(t, apptest.Options{})

	resp, err := http.Get(a.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Tags        []string `json:"tags"`
			OperationID string   `json:"operationId"`
		} `json:"paths"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	tags := map[string]bool{}
	// Swagger UI gives each rendered operation the id
	// operations-<tag>-<operationId>.
	var want []string
	for _, item := range doc.Paths {
		for method, op := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options":
				ops++
				opTags := op.Tags
				if len(opTags) == 0 {
					opTags = []string{"default"}
				}
				for _, tag := range opTags {
					tags[tag] = true
					want = append(want, "operations-"+tag+"-"+op.OperationID)
				}
			}
		}
	}
	if ops < 50 {
		t.Fatalf("/openapi.json documents %d operations", ops)
	}

	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var errs consoleErrors
	errs.listen(ctx)
	self, _ := url.Parse(a.URL)
	var mu sync.Mutex
	var outside []string
	requests := chromedp.Events(ctx, network.RequestWillBeSent)
	go func() {
		for e, err := range requests {
			if err != nil {
				return
			}
			if e.Request == nil || strings.HasPrefix(e.Request.URL, "data:") {
				continue
			}
			if u, err := url.Parse(e.Request.URL); err != nil || u.Host != self.Host {
				mu.Lock()
				outside = append(outside, e.Request.URL)
				mu.Unlock()
			}
		}
	}()

	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/docs")); err != nil {
		t.Fatal(err)
	}
	// The reference opens with every tag folded, and Swagger UI renders
	// only the operations near the window (a virtual list): a reader
	// scrolls through it, opening each tag met, and every tag and every
	// operation of /openapi.json is met on the way.
	waitJS(ctx, t, 60*time.Second, "the tags listed", `document.querySelectorAll('.opblock-tag').length > 0`)
	scrollStart := time.Now()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](scrollThroughReference, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("scroll through the reference: %v", err)
	}
	var seen struct {
		Tags []string `json:"tags"`
		Ops  []string `json:"ops"`
	}
	if err := json.Unmarshal([]byte(raw), &seen); err != nil {
		t.Fatalf("the scroll's answer %q: %v", raw, err)
	}
	t.Logf("%d tags and %d operations rendered while scrolling (%v); /openapi.json documents %d tags and %d operations", len(seen.Tags), len(seen.Ops), time.Since(scrollStart).Round(time.Millisecond), len(tags), ops)
	for tag := range tags {
		if !slices.Contains(seen.Tags, tag) {
			t.Errorf("tag %q of /openapi.json is not in the reference", tag)
		}
	}
	for _, id := range want {
		if !slices.Contains(seen.Ops, id) {
			t.Errorf("operation %s of /openapi.json is not in the reference", id)
		}
	}

	// Open GET /api/files: its query parameters and answers are shown.
	clicked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](openListOperation, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("find GET /api/files: %v", err)
	}
	if !clicked {
		t.Fatal("no GET /api/files operation in the reference")
	}
	waitJS(ctx, t, 20*time.Second, "the operation's parameters and answers",
		`(function(){var o=document.querySelector('.opblock-get.is-open');if(!o)return false;
		var t=o.textContent;return t.indexOf('per_page')>=0 && t.indexOf('200')>=0 && t.indexOf('401')>=0})()`)

	mu.Lock()
	if len(outside) > 0 {
		t.Errorf("the reference loaded from outside this server: %v", outside)
	}
	mu.Unlock()
	if msgs := errs.take(); len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
}

// scrollThroughReference scrolls the window from the top of /docs to its
// end a part of a screen at a time, opening each folded tag it meets and
// noting every tag and operation rendered on the way; it answers
// {"tags": […], "ops": […]} as JSON.
const scrollThroughReference = `(async function(){
	var frame = function(){ return new Promise(function(r){ requestAnimationFrame(function(){ setTimeout(r, 60) }) }) };
	var tags = {}, ops = {};
	window.scrollTo(0, 0);
	await frame();
	var still = 0;
	for (var i = 0; i < 2000 && still < 5; i++) {
		document.querySelectorAll('.opblock-tag').forEach(function(h){
			tags[h.getAttribute('data-tag')] = true;
			if (h.getAttribute('data-is-open') === 'false') { h.click(); }
		});
		document.querySelectorAll('.opblock').forEach(function(o){ if (o.id) ops[o.id] = true });
		var before = window.scrollY;
		window.scrollBy(0, Math.round(window.innerHeight * 0.6));
		await frame();
		still = window.scrollY === before ? still + 1 : 0;
	}
	return JSON.stringify({tags: Object.keys(tags), ops: Object.keys(ops)});
})()`

// openListOperation scrolls /docs from the top until GET /api/files is
// rendered and opens it; it answers whether it was found.
const openListOperation = `(async function(){
	var frame = function(){ return new Promise(function(r){ requestAnimationFrame(function(){ setTimeout(r, 60) }) }) };
	window.scrollTo(0, 0);
	await frame();
	for (var i = 0; i < 2000; i++) {
		var b = Array.prototype.slice.call(document.querySelectorAll('.opblock-get')).find(function(o){
			var p = o.querySelector('.opblock-summary-path'); return p && p.getAttribute('data-path') === '/api/files' });
		if (b) { (b.querySelector('.opblock-summary-control') || b.querySelector('.opblock-summary')).click(); return true }
		var before = window.scrollY;
		window.scrollBy(0, Math.round(window.innerHeight * 0.6));
		await frame();
		if (window.scrollY === before) return false;
	}
	return false;
})()`
