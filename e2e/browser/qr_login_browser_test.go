package browser_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"docflow/e2e/e2etest"
	"docflow/internal/app/apptest"
)

// TestQRLoginPageInBrowser: in headless Chromium a user opens /qr-login,
// signs in, sees the QR code docflow drew, a phone claims the challenge
// through the API, and the page says so, without a console error (the
// Content Security Policy allows no inline script).
func TestQRLoginPageInBrowser(t *testing.T) {
	ctx, cancel := headlessChromium(t)
	defer cancel()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"ADMIN_PASSWORD": "admin-password"}})
	a.LocalUser(t, "dana@example.com", false)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	var errs consoleErrors
	errs.listen(ctx)

	signIn(ctx, t, &errs, a.URL, "/qr-login", "dana@example.com", apptest.Password("dana@example.com"),
		chromedp.WaitVisible(chromedp.ID("qr-code")),
	)
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.HasSuffix(loc, "/qr-login") {
		t.Fatalf("landed on %s", loc)
	}
	// The image is docflow's SVG, loaded and drawn.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(function(){var i=document.getElementById("qr-code");
		return i.complete && i.naturalWidth > 100})()`, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the QR code never loads: %v (console: %q)", err, errs.take())
	}
	src := eval[string](ctx, t, `document.getElementById("qr-code").getAttribute("src")`)
	m := regexp.MustCompile(`^/api/qr-auth/challenge/([A-Za-z0-9_-]+)/qr\.svg$`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("the QR image is %q, not docflow's", src)
	}
	if s := text(ctx, t, "#qr-status"); !strings.Contains(s, "Scan this code") {
		t.Fatalf("status before the claim: %q", s)
	}

	// The phone claims it.
	if st, _, raw := (&e2etest.Phone{T: t, Base: a.URL}).Call("POST", "/api/qr-auth/claim",
		map[string]string{"challenge_token": m[1], "device_name": "Dana's phone"}); st != 201 {
		t.Fatalf("claim: %d %s", st, raw)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.getAttribute("data-qr") === "claimed"`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("the page never says claimed: %v (status %q)", err, text(ctx, t, "#qr-status"))
	}
	if s := text(ctx, t, "#qr-status"); !strings.Contains(s, "Signed in on Dana's phone") {
		t.Fatalf("status after the claim: %q", s)
	}
	if eval[bool](ctx, t, `!document.getElementById("qr-code").hidden`) {
		t.Error("the used QR code is still shown")
	}
	if eval[bool](ctx, t, `document.getElementById("qr-new").hidden`) {
		t.Error("no way to show a new code after the claim")
	}
	// A new code from the keyboard.
	if err := chromedp.Do(ctx, chromedp.Focus(chromedp.ID("qr-new")), chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.getAttribute("data-qr") === "pending" &&
		document.getElementById("qr-code").getAttribute("src") !== `+strconv.Quote(src), chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("no new code: %v", err)
	}
	if msgs := errs.take(); len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
}
