package http

import (
	"io/fs"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestAppPagesAnswerTheApplication: every page route answers the web
// application's page naming the signed-in user (or, in a binary built
// without it, a page saying how to build it); a visitor who is not signed
// in is sent to sign in and back to the same address.
func TestAppPagesAnswerTheApplication(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil)
	_, built := fs.Stat(staticFiles, appIndex)
	for _, path := range []string{"/", "/files/42", "/pipelines", "/rules", "/integrations", "/webhooks", "/tokens", "/users", "/audit"} {
		resp, body := e.do("GET", path, "", nil)
		e.expect(resp, body, 200)
		page := string(body)
		if built == nil {
			if !strings.Contains(page, `<meta name="docflow-session" content="{&#34;id&#34;:`) || !strings.Contains(page, `&#34;single_user&#34;:true`) {
				t.Fatalf("%s: no session in the page:\n%s", path, page)
			}
		} else if !strings.Contains(page, "make web") {
			t.Fatalf("%s: the page without assets does not say how to build them:\n%s", path, page)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("%s: Cache-Control %q", path, cc)
		}
	}

	auth := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_USERNAME": "root", "ADMIN_PASSWORD": "correct horse battery"})
	resp, body := auth.do("GET", "/files/7?tab=comments", "", nil)
	auth.expect(resp, body, 303)
	if loc := resp.Header.Get("Location"); loc != "/login?next="+url.QueryEscape("/files/7?tab=comments") {
		t.Fatalf("location %q", loc)
	}
}

// TestAppAssetsAreCompressedAndKept: the built scripts and styles are sent
// Brotli- or gzip-compressed to browsers that accept it, and may be kept
// for good (their names change with their content).
func TestAppAssetsAreCompressedAndKept(t *testing.T) {
	t.Parallel()
	if _, err := fs.Stat(staticFiles, appIndex); err != nil {
		t.Skip("the web application is not built into static/app (make web)")
	}
	e := newTestEnv(t, nil)
	_, page := e.do("GET", "/", "", nil)
	assets := regexp.MustCompile(`(?:href|src)="(/static/app/assets/[^"]+)"`).FindAllStringSubmatch(string(page), -1)
	if len(assets) < 2 {
		t.Fatalf("the page links %d assets:\n%s", len(assets), page)
	}
	for _, m := range assets {
		_, plain := e.do("GET", m[1], "", nil, "Accept-Encoding", "identity")
		for _, enc := range []string{"br", "gzip"} {
			resp, body := e.do("GET", m[1], "", nil, "Accept-Encoding", enc)
			e.expect(resp, body, 200)
			if ce := resp.Header.Get("Content-Encoding"); ce != enc || len(body) >= len(plain) {
				t.Fatalf("%s with %s: Content-Encoding %q, %d bytes of %d", m[1], enc, ce, len(body), len(plain))
			}
			if cc := resp.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
				t.Fatalf("%s: Cache-Control %q", m[1], cc)
			}
			if !strings.Contains(resp.Header.Get("Vary"), "Accept-Encoding") {
				t.Fatalf("%s: Vary %q", m[1], resp.Header.Get("Vary"))
			}
		}
	}
	resp, body := e.do("GET", "/static/app/assets/..%2findex.html", "", nil)
	if resp.StatusCode != 404 {
		t.Fatalf("asset traversal: %d %s", resp.StatusCode, body)
	}
}
