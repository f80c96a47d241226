package browser_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"docflow/internal/app/apptest"
)

// TestSettingsPageInBrowser signs in, opens /settings in headless
// Chromium and checks that every setting is there by category with its
// source, that no secret is in the page, that saving sends only what
// changed (one setting typed, one secret typed: the table then holds those
// two and nothing else), that the new source shows, that Reset returns a
// setting to the environment, that the page is used with the keyboard,
// and that it fits a phone's screen; without a console error (a Content
// Security Policy refusal would be one).
func TestSettingsPageInBrowser(t *testing.T) {
	ctx, cancel := headlessChromium(t)
	defer cancel()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true",
		"ADMIN_PASSWORD": "settings password", "OPENAI_API_KEY": "sk-never-in-the-page", "UPLOAD_RATE_LIMIT_WINDOW": "90"}})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var errs consoleErrors
	errs.listen(ctx)

	signIn(ctx, t, &errs, a.URL, "/settings", "admin", "settings password",
		chromedp.WaitVisible(chromedp.ID("in-UPLOAD_RATE_LIMIT_WINDOW")),
	)
	page := eval[string](ctx, t, `document.documentElement.outerHTML`)
	for _, secret := range []string{"sk-never-in-the-page", "settings password"} {
		if strings.Contains(page, secret) {
			t.Fatalf("the page holds the secret %q", secret)
		}
	}
	if n := eval[int](ctx, t, `document.querySelectorAll(".setting").length`); n < 100 {
		t.Errorf("%d settings on the page", n)
	}
	for _, h := range []string{"Core", "Authentication", "Uploads", "OCR", "AI", "Advanced"} {
		if !strings.Contains(text(ctx, t, "main"), h) {
			t.Errorf("no %s section", h)
		}
	}
	if got := text(ctx, t, "#src-UPLOAD_RATE_LIMIT_WINDOW"); got != "env" {
		t.Errorf("source shown %q, want env", got)
	}
	if !strings.Contains(text(ctx, t, "#row-DEBUG"), "restart") {
		t.Errorf("DEBUG is not marked as needing a restart: %q", text(ctx, t, "#row-DEBUG"))
	}
	if typ := eval[string](ctx, t, `document.getElementById("in-OPENAI_API_KEY").type`); typ != "password" {
		t.Errorf("the secret's field is %q", typ)
	}

	// Change one value and one secret from the keyboard; Enter saves.
	err := chromedp.Do(ctx,
		chromedp.Clear(chromedp.ID("in-UPLOAD_RATE_LIMIT_WINDOW")),
		chromedp.SendKeys(chromedp.ID("in-UPLOAD_RATE_LIMIT_WINDOW"), "120"),
		chromedp.SendKeys(chromedp.ID("in-OPENAI_API_KEY"), "sk-typed-in-the-page"+kb.Enter),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("src-UPLOAD_RATE_LIMIT_WINDOW").textContent === "db" && document.body.getAttribute("data-saved") === "1"`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the new source never shows: %v (status %q, console %q)", err, text(ctx, t, "#status"), errs.take())
	}
	if got := a.Settings.Get("UPLOAD_RATE_LIMIT_WINDOW"); got != "120" {
		t.Fatalf("stored %q", got)
	}
	if got := a.Settings.Get("OPENAI_API_KEY"); got != "sk-typed-in-the-page" {
		t.Fatalf("secret stored as %q", got)
	}
	if v := eval[string](ctx, t, `document.getElementById("in-OPENAI_API_KEY").value`); v != "" {
		t.Errorf("the secret stays in its field: %q", v)
	}
	if got := text(ctx, t, "#src-OPENAI_API_KEY"); got != "db" {
		t.Errorf("secret's source %q", got)
	}
	if keys := storedKeys(t, a); strings.Join(keys, ",") != "OPENAI_API_KEY,UPLOAD_RATE_LIMIT_WINDOW" {
		t.Fatalf("the page saved more than it changed: %v", keys)
	}

	// A new load shows the stored value and its source; the secret is
	// still not in the page.
	if err := chromedp.Do(ctx, chromedp.Navigate(a.URL+"/settings"), chromedp.WaitVisible(chromedp.ID("in-UPLOAD_RATE_LIMIT_WINDOW"))); err != nil {
		t.Fatal(err)
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("in-UPLOAD_RATE_LIMIT_WINDOW"))); v != "120" || text(ctx, t, "#src-UPLOAD_RATE_LIMIT_WINDOW") != "db" {
		t.Fatalf("after a reload: %q from %q", v, text(ctx, t, "#src-UPLOAD_RATE_LIMIT_WINDOW"))
	}
	if strings.Contains(eval[string](ctx, t, `document.documentElement.outerHTML`), "sk-typed") {
		t.Fatal("the stored secret is in the page")
	}

	// Reset, from the keyboard: the environment's value is back.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.CSS(`#row-UPLOAD_RATE_LIMIT_WINDOW button.reset`)), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.getElementById("src-UPLOAD_RATE_LIMIT_WINDOW").textContent === "env"`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("reset: %v (status %q)", err, text(ctx, t, "#status"))
	}
	if v, _ := chromedp.Run(ctx, chromedp.Value(chromedp.ID("in-UPLOAD_RATE_LIMIT_WINDOW"))); v != "90" || a.Settings.Get("UPLOAD_RATE_LIMIT_WINDOW") != "90" {
		t.Fatalf("after reset: field %q, store %q", v, a.Settings.Get("UPLOAD_RATE_LIMIT_WINDOW"))
	}

	// A refused value: its message beside the field, nothing stored.
	err = chromedp.Do(ctx,
		chromedp.Clear(chromedp.ID("in-STEP_TIMEOUT")),
		chromedp.SendKeys(chromedp.ID("in-STEP_TIMEOUT"), "soon"),
		chromedp.Click(chromedp.ID("save")),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById("err-STEP_TIMEOUT").hidden`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("no message for a refused value: %v (status %q)", err, text(ctx, t, "#status"))
	}
	if msg := text(ctx, t, "#err-STEP_TIMEOUT"); !strings.Contains(msg, "integer") {
		t.Errorf("message %q", msg)
	}

	// Keyboard: Tab from the top reaches the first fields.
	eval[bool](ctx, t, `(document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0), true)`)
	reached := map[string]bool{}
	for range 40 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		reached[eval[string](ctx, t, `document.activeElement.id`)] = true
	}
	if !reached["in-LISTEN_ADDR"] {
		t.Errorf("Tab never reaches the first setting (reached %v)", reached)
	}

	// A phone's screen: nothing wider than the viewport.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Sleep(500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if eval[bool](ctx, t, `document.documentElement.scrollWidth > window.innerWidth + 1`) {
		t.Errorf("on a 390 px screen the page scrolls sideways (%v px wide)", eval[float64](ctx, t, `document.documentElement.scrollWidth`))
	}
	if msgs := errs.take(); len(msgs) > 0 {
		// The refused save answers 422, which the browser logs as a failed load.
		var other []string
		for _, m := range msgs {
			if !strings.Contains(m, "422") {
				other = append(other, m)
			}
		}
		if len(other) > 0 {
			t.Errorf("console errors:\n%s", strings.Join(other, "\n"))
		}
	}
}

// storedKeys are the keys with a database value.
func storedKeys(t *testing.T, a *apptest.App) []string {
	t.Helper()
	rows, err := a.DB.Pool.Query(context.Background(), `SELECT key FROM settings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
