package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// The management pages in headless Chromium: an administrator creates and
// edits a pipeline, a routing rule, a webhook and an API token through
// the pages alone, and each change is checked through the API. Names carry
// markup, which the pages must show as text; the pages pass axe-core.

// adminAPI reads path from the API with the administrator's token.
func adminAPI(t *testing.T, a *apptest.App, token, path string, v any) {
	t.Helper()
	req, _ := nethttp.NewRequest("GET", a.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
}

// typeInto types text into the field named name, after clearing it.
func typeInto(ctx context.Context, t *testing.T, name, text string) {
	t.Helper()
	sel := fmt.Sprintf(`[name=%q]`, name)
	// NOTE: chromedp.Clear empties the element without an input event, so
	// the page's own state keeps the old value and the keys typed next are
	// added to it: the field is emptied as a user's delete key does.
	clear := fmt.Sprintf(`(function(){var e=document.querySelector(%q);e.value='';e.dispatchEvent(new Event('input',{bubbles:true}));return true})()`, sel)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("type into %s: %v", name, err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](clear)); err != nil {
		t.Fatalf("type into %s: %v", name, err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(sel), text)); err != nil {
		t.Fatalf("type into %s: %v", name, err)
	}
}

// press clicks the button (or link) whose text or aria-label is label,
// inside the element matched by within ("" for the page).
func press(ctx context.Context, t *testing.T, within, label string) {
	t.Helper()
	js := fmt.Sprintf(`(function(){var root=%q?document.querySelector(%q):document;if(!root)return false;
		var b=Array.prototype.slice.call(root.querySelectorAll('button, a')).find(function(e){
			return !e.disabled && (e.getAttribute('aria-label')===%q || e.textContent.trim()===%q)});
		if(!b)return false;b.click();return true})()`, within, within, label, label)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Fatalf("press %q: %v", label, err)
	}
}

// open goes to path through the navigation (a click, as a user does) and
// waits for its heading.
func open(ctx context.Context, t *testing.T, link, heading string) {
	t.Helper()
	press(ctx, t, "nav", link)
	waitJS(ctx, t, 15*time.Second, "the page "+heading, fmt.Sprintf(`(function(){var h=document.querySelector('main h1');return !!h && h.textContent===%q})()`, heading))
}

func TestAdminPagesInBrowser(t *testing.T) {
	if _, err := os.Stat("../../http/static/app/index.html"); err != nil {
		t.Skip("the web pages are not built into http/static/app: make test builds them (make web, scripts/web.sh)")
	}
	t.Parallel()
	receiver := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) { w.WriteHeader(204) }))
	defer receiver.Close()
	ctx, cancel := headlessChromium(t)
	t.Cleanup(cancel)
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "admin pages test",
		"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}})
	token := a.Token(t, "admin")
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	screenshotOnFailure(t, ctx)
	var errs consoleErrors
	errs.listen(ctx)
	// Confirmation dialogs are answered yes.
	confirmYes := `window.confirm = function(){ return true }; true`

	signIn(ctx, t, &errs, a.URL, "/pipelines", "admin", "admin pages test",
		chromedp.WaitVisible(chromedp.CSS(`[name="pipeline-name"]`)),
	)

	// A pipeline: create it, rename and describe it, add a step.
	const pipeName = `Scans <img src=x onerror="window.__xss=5">`
	typeInto(ctx, t, "pipeline-name", pipeName)
	press(ctx, t, "", "Create pipeline")
	waitJS(ctx, t, 15*time.Second, "the pipeline's editor", `!!document.querySelector('[name="edit-pipeline-description"]')`)
	typeInto(ctx, t, "edit-pipeline-description", "German scans")
	press(ctx, t, "#pipeline-editor", "Save pipeline")
	pick(ctx, t, `[name="add-step"]`, "ocr")
	press(ctx, t, "#pipeline-editor", "Add step")
	waitJS(ctx, t, 15*time.Second, "the step in the editor", `document.querySelectorAll('#pipeline-editor ol.steps li').length === 1`)
	var pipes []struct {
		ID          int64  `json:"id"`
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	var pipeID int64
	testsupport.WaitFor(t, 3*time.Minute, "the pipeline saved with its description", func() bool {
		adminAPI(t, a, token, "/api/pipelines", &pipes)
		for _, p := range pipes {
			if p.Name == pipeName && p.Description == "German scans" {
				pipeID = p.ID
				return true
			}
		}
		return false
	})
	var pipe struct {
		Steps []struct {
			StepType string `json:"step_type"`
		} `json:"steps"`
	}
	adminAPI(t, a, token, fmt.Sprintf("/api/pipelines/%d", pipeID), &pipe)
	if len(pipe.Steps) != 1 || pipe.Steps[0].StepType != "ocr" {
		t.Errorf("pipeline steps after adding ocr: %+v", pipe.Steps)
	}
	if got := text(ctx, t, "#pipelines-table"); !strings.Contains(got, pipeName) {
		t.Errorf("the pipelines table does not show the name as text: %q", got)
	}
	noScriptRan(ctx, t, "/pipelines")
	if v := axeViolations(ctx, t); len(v) > 0 {
		t.Errorf("/pipelines: accessibility violations:\n%s", strings.Join(v, "\n"))
	}

	// A routing rule to that pipeline: create it, then change its value.
	open(ctx, t, "Rules", "Rules")
	typeInto(ctx, t, "new-route-name", "scanned files")
	typeInto(ctx, t, "new-route-field", "filename")
	pick(ctx, t, `[name="new-route-operator"]`, "contains")
	typeInto(ctx, t, "new-route-value", "scan")
	pick(ctx, t, `[name="new-route-target"]`, fmt.Sprint(pipeID))
	press(ctx, t, "", "Add routing rule")
	waitJS(ctx, t, 15*time.Second, "the rule in the table", `!!document.querySelector('#routing-table') && document.querySelector('#routing-table').textContent.indexOf('scanned files') >= 0`)
	press(ctx, t, "#routing-table", "Edit scanned files")
	var ruleID int64
	var rules []struct {
		ID               int64  `json:"id"`
		Name             string `json:"name"`
		Value            string `json:"value"`
		TargetPipelineID int64  `json:"target_pipeline_id"`
	}
	adminAPI(t, a, token, "/api/routing-rules", &rules)
	for _, r := range rules {
		if r.Name == "scanned files" {
			ruleID = r.ID
		}
	}
	if ruleID == 0 {
		t.Fatalf("the routing rule was not created: %+v", rules)
	}
	typeInto(ctx, t, fmt.Sprintf("route-%d-value", ruleID), "scan_")
	press(ctx, t, "#routing-table", "Save rule")
	testsupport.WaitFor(t, 3*time.Minute, "the rule's new value", func() bool {
		adminAPI(t, a, token, "/api/routing-rules", &rules)
		for _, r := range rules {
			if r.ID == ruleID {
				return r.Value == "scan_" && r.TargetPipelineID == pipeID
			}
		}
		return false
	})
	// A classification rule as well.
	typeInto(ctx, t, "new-class-name", "utility bills")
	typeInto(ctx, t, "new-class-pattern", "kWh|electricity")
	press(ctx, t, "", "Add classification rule")
	waitJS(ctx, t, 15*time.Second, "the classification rule in the table", `!!document.querySelector('#class-table') && document.querySelector('#class-table').textContent.indexOf('utility bills') >= 0`)
	if v := axeViolations(ctx, t); len(v) > 0 {
		t.Errorf("/rules: accessibility violations:\n%s", strings.Join(v, "\n"))
	}

	// A webhook: create it for document.processed, then describe it.
	open(ctx, t, "Webhooks", "Webhooks and hooks")
	typeInto(ctx, t, "new-webhook-url", receiver.URL+"/docflow")
	typeInto(ctx, t, "new-webhook-secret", "a long webhook secret")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[name="new-webhook-document.processed"]`))); err != nil {
		t.Fatal(err)
	}
	press(ctx, t, "", "Add webhook")
	waitJS(ctx, t, 15*time.Second, "the webhook in the list", fmt.Sprintf(`document.querySelector('#webhooks-list').textContent.indexOf(%q) >= 0`, receiver.URL))
	press(ctx, t, "#webhooks-list", "Edit "+receiver.URL+"/docflow")
	var hooks []struct {
		ID          int64    `json:"id"`
		URL         string   `json:"url"`
		Events      []string `json:"events"`
		HasSecret   bool     `json:"has_secret"`
		Description string   `json:"description"`
	}
	adminAPI(t, a, token, "/api/webhooks/", &hooks)
	if len(hooks) != 1 || hooks[0].URL != receiver.URL+"/docflow" || !hooks[0].HasSecret || fmt.Sprint(hooks[0].Events) != "[document.processed]" {
		t.Fatalf("webhook after creating it: %+v", hooks)
	}
	typeInto(ctx, t, fmt.Sprintf("webhook-%d-description", hooks[0].ID), "archive <b>copy</b>")
	press(ctx, t, "#webhooks-list", "Save webhook")
	testsupport.WaitFor(t, 3*time.Minute, "the webhook's description", func() bool {
		adminAPI(t, a, token, "/api/webhooks/", &hooks)
		return len(hooks) == 1 && hooks[0].Description == "archive <b>copy</b>" && hooks[0].HasSecret
	})
	waitJS(ctx, t, 15*time.Second, "the description shown as text", `document.querySelector('#webhooks-list').textContent.indexOf('archive <b>copy</b>') >= 0 && !document.querySelector('#webhooks-list b')`)
	press(ctx, t, "#webhooks-list", "Deliveries of "+receiver.URL+"/docflow")
	waitJS(ctx, t, 15*time.Second, "the delivery log", `document.querySelector('#webhooks-list').textContent.indexOf('No deliveries yet') >= 0`)
	if v := axeViolations(ctx, t); len(v) > 0 {
		t.Errorf("/webhooks: accessibility violations:\n%s", strings.Join(v, "\n"))
	}

	// An API token: create it (shown once), then revoke it.
	open(ctx, t, "API tokens", "API tokens")
	typeInto(ctx, t, "token-name", "backup script")
	typeInto(ctx, t, "token-days", "30")
	press(ctx, t, "", "Create token")
	waitJS(ctx, t, 15*time.Second, "the new token shown once", `(function(){var e=document.getElementById('new-token-value');return !!e && e.textContent.indexOf('dfl_')===0})()`)
	plain := text(ctx, t, "#new-token-value")
	req, _ := nethttp.NewRequest("GET", a.URL+"/api/api-tokens/", nil)
	req.Header.Set("Authorization", "Bearer "+plain)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the token the page showed does not sign in: %v %v", err, resp)
	}
	resp.Body.Close()
	eval[bool](ctx, t, confirmYes)
	press(ctx, t, "#tokens-table", "Revoke backup script")
	var tokens []struct {
		Name     string `json:"name"`
		IsActive bool   `json:"is_active"`
	}
	testsupport.WaitFor(t, 3*time.Minute, "the token revoked", func() bool {
		adminAPI(t, a, token, "/api/api-tokens/", &tokens)
		for _, tk := range tokens {
			if tk.Name == "backup script" {
				return !tk.IsActive
			}
		}
		return false
	})
	waitJS(ctx, t, 15*time.Second, "the token shown revoked", `document.querySelector('#tokens-table').textContent.indexOf('revoked') >= 0`)

	// The administrators' pages answer, and nothing ran.
	open(ctx, t, "Audit log", "Audit log")
	waitJS(ctx, t, 15*time.Second, "audit entries", `!!document.querySelector('#audit-table')`)
	open(ctx, t, "Users", "Users")
	open(ctx, t, "Integrations", "Integrations")
	noScriptRan(ctx, t, "the management pages")
	if msgs := errs.take(); len(msgs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(msgs, "\n"))
	}
}
