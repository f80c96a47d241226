package browser_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// What every test of the package uses: a headless Chromium of its own,
// the page's console errors, a screenshot when the test fails, and short
// ways to evaluate, read and wait for the page.

// browserPath finds Debian's chromium (scripts/install-deps.sh test).
func browserPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// headlessChromium starts a headless Chromium with a fresh profile for
// at most five minutes (a test of several pages takes two on a loaded
// machine); cancel ends it.
func headlessChromium(t *testing.T) (context.Context, context.CancelFunc) {
	t.Helper()
	return headlessChromiumFor(t, 5*time.Minute)
}

// headlessChromiumFor is headlessChromium for at most d.
func headlessChromiumFor(t *testing.T, d time.Duration) (context.Context, context.CancelFunc) {
	t.Helper()
	path := browserPath()
	if path == "" {
		t.Skip("no chromium on PATH: scripts/install-deps.sh test installs it")
	}
	profile, err := os.MkdirTemp("", "docflow-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.UserDataDir(profile),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-default-browser-check", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	ctx, tcancel := context.WithTimeout(ctx, d)
	return ctx, func() {
		tcancel()
		cancel()
		acancel()
		os.RemoveAll(profile)
	}
}

// consoleErrors gathers what the page reports as errors: console.error,
// uncaught exceptions, and the browser's own log at the error level
// (failed loads, Content Security Policy refusals).
type consoleErrors struct {
	mu   sync.Mutex
	msgs []string
}

func (c *consoleErrors) listen(ctx context.Context) {
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.mu.Lock()
				c.msgs = append(c.msgs, m.String()+" "+m.URL)
				c.mu.Unlock()
			}
		}
	}()
}

func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.msgs
	c.msgs = nil
	return out
}

// eval evaluates js in the page and returns its value, failing the test
// on an error.
func eval[T any](ctx context.Context, t *testing.T, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// text is the text content of the element matched by css.
func text(ctx context.Context, t *testing.T, css string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(css)))
	if err != nil {
		t.Fatalf("text of %s: %v", css, err)
	}
	return v
}

// screenshotOnFailure saves the page as a PNG when the test failed, and
// names the file in the log.
func screenshotOnFailure(t *testing.T, ctx context.Context) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Logf("no screenshot: %v", err)
			return
		}
		name := filepath.Join(os.TempDir(), fmt.Sprintf("docflow-%s-%d.png", t.Name(), time.Now().Unix()))
		if err := os.WriteFile(name, png, 0o644); err == nil {
			t.Logf("screenshot of the failure: %s", name)
		}
	})
}

// waitJS waits until the expression is true (or fails the test after d).
func waitJS(ctx context.Context, t *testing.T, d time.Duration, what, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(d))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('main') ? document.querySelector('main').innerText : document.body.innerText`))
		t.Fatalf("%s: %v\npage:\n%s", what, err, page)
	}
}

// signIn opens path on the process at base, signs in through the form it
// sends a visitor to, typing like a user, and runs then (waiting for the
// page's own content); a failure names the console's errors.
func signIn(ctx context.Context, t *testing.T, errs *consoleErrors, base, path, user, password string, then ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	steps := append([]chromedp.Action[chromedp.Void]{
		chromedp.Navigate(base + path),
		chromedp.WaitVisible(chromedp.ID("username")),
		chromedp.SendKeys(chromedp.ID("username"), user),
		chromedp.SendKeys(chromedp.ID("password"), password+kb.Enter),
	}, then...)
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("sign in and open %s: %v (console: %q)", path, err, errs.take())
	}
}
