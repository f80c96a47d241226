package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"docflow/internal/app/apptest"
)

// The web section: the first load of the documents page (/) in headless
// Chromium with its cache disabled, as a new visitor's browser loads it —
// what it transfers (compressed; the API's answers excluded) and when the
// document list is shown and usable (the page's performance mark
// docflow-documents, set once the list rendered, relative to the start of
// the navigation). Each load opens a fresh tab; the figure is the median of
// webLoads loads, the worst printed beside it.

const webLoads = 7

func benchWeb(ctx context.Context, r *Report, o *options) error {
	const section = "web"
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		return errors.New("no chromium on PATH: scripts/install-deps.sh test installs it")
	}
	if _, err := os.Stat("http/static/app/index.html"); err != nil {
		return errors.New("the web pages are not built into http/static/app: run make web")
	}
	dir, err := os.MkdirTemp("", "docflow-bench-web-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	log := zerolog.Nop()
	a, err := apptest.Start(ctx, apptest.Options{Role: "api", Log: &log, Workdir: dir, NoRelay: true, ProductionTimings: true,
		Env: map[string]string{"RATE_LIMITING_ENABLED": "false"}})
	if err != nil {
		return fmt.Errorf("web bench: %w", err)
	}
	defer a.Close()
	if err := seedFiles(ctx, a.DB, 100); err != nil {
		return err
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(browser), chromedp.UserDataDir(dir + "/profile"),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-default-browser-check", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx); err != nil {
		return fmt.Errorf("start chromium: %w", err)
	}
	var readies, sizes []float64
	for i := range webLoads + 1 {
		tctx, tcancel := chromedp.NewContext(bctx)
		lctx, lcancel := context.WithTimeout(tctx, time.Minute)
		ready, bytes, err := webFirstLoad(lctx, a.URL+"/")
		lcancel()
		tcancel()
		if err != nil {
			return fmt.Errorf("load %d of /: %w", i+1, err)
		}
		if i == 0 {
			continue // the server's first answers fill its caches: a warm-up
		}
		readies = append(readies, ready)
		sizes = append(sizes, bytes/1024)
	}
	slices.Sort(readies)
	fmt.Printf("   the documents page shown after %.0f ms (median of %d cold loads; worst %.0f ms)\n", readies[len(readies)/2], len(readies), readies[len(readies)-1])
	r.AtMost(section, "first load of / transferred (compressed, API answers excluded)", slices.Max(sizes), "KB", 200)
	r.AtMost(section, fmt.Sprintf("first load of / interactive (list shown), median of %d cold loads", len(readies)), readies[len(readies)/2], "ms", 1000)
	return nil
}

// webFirstLoad loads url in the tab of ctx with its cache disabled and
// returns when the document list was shown (ms from the navigation's
// start) and what the load transferred (bytes, the API's answers
// excluded).
func webFirstLoad(ctx context.Context, url string) (ready, bytes float64, err error) {
	if _, err = chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return 0, 0, err
	}
	if _, err = chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		return 0, 0, err
	}
	if err = chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return 0, 0, err
	}
	if _, err = chromedp.Run(ctx, chromedp.Poll[bool](`performance.getEntriesByName('docflow-documents').length > 0`,
		chromedp.WithPollingInterval(5*time.Millisecond))); err != nil {
		return 0, 0, err
	}
	if ready, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByName('docflow-documents')[0].startTime`)); err != nil {
		return 0, 0, err
	}
	bytes, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource'))
		.filter(function(e){return e.name.indexOf('/api/') < 0})
		.reduce(function(s,e){return s+(e.transferSize||e.encodedBodySize||0)},0)`))
	return ready, bytes, err
}
