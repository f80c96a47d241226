package http

import (
	"io/fs"
	"strings"
	"testing"
)

// TestOpsPageAccess: /ops sends a visitor to sign in, refuses a user who is
// not an administrator, and serves the page (with its scripts, no inline
// one) to an administrator.
func TestOpsPageAccess(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "admin password"})
	resp, body := e.do("GET", "/ops", "", nil, "Accept", "text/html")
	e.expect(resp, body, 303)
	if loc := resp.Header.Get("Location"); loc != "/login?next=%2Fops" {
		t.Fatalf("location %q", loc)
	}
	resp, body = e.do("GET", "/ops", e.token("someone-else"), nil)
	e.expect(resp, body, 403)

	resp, body = e.do("GET", "/ops", e.token("admin"), nil)
	e.expect(resp, body, 200)
	page := string(body)
	want := []string{`<select id="range"`, `<input type="checkbox" id="auto" checked>`, `<script src="/static/ops.js"></script>`,
		`id="chart-throughput"`, `id="chart-workers"`, `href="/ops"`}
	assets := []string{"/static/ops.js", "/static/ops.css"}
	// A plain go test before make has no chart library to serve.
	if _, err := fs.Stat(staticFiles, chartLibrary); err == nil {
		want = append(want, `<script src="/static/vendor/uPlot.iife.min.js"></script>`)
		assets = append(assets, "/static/vendor/uPlot.iife.min.js", "/static/vendor/uPlot.min.css")
		if strings.Contains(page, `id="no-charts"`) {
			t.Errorf("the missing-library notice with the library built")
		}
	} else {
		t.Log("chart library not built (make web): its files are not checked")
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "style=") {
		t.Errorf("inline script or style in:\n%s", page)
	}
	for _, path := range assets {
		resp, body := e.do("GET", path, "", nil)
		e.expect(resp, body, 200)
	}
	for _, path := range []string{"/static/vendor/README.md", "/static/vendor/..%2Fops.js", "/static/vendor/nothing.js"} {
		resp, body := e.do("GET", path, "", nil)
		e.expect(resp, body, 404)
	}
}

// TestOpsPageWithoutChartLibrary: a binary built before the front-end
// assets says so on the page and loads no chart script; the tables still
// come from its own script.
func TestOpsPageWithoutChartLibrary(t *testing.T) {
	// Serial: it swaps the package-level chartLibrary, which every server reads.
	saved := chartLibrary
	chartLibrary = "static/vendor/not-built.js"
	t.Cleanup(func() { chartLibrary = saved })
	e := newTestEnv(t, nil)
	resp, body := e.do("GET", "/ops", "", nil)
	e.expect(resp, body, 200)
	page := string(body)
	if !strings.Contains(page, `id="no-charts"`) || !strings.Contains(page, "make build") ||
		strings.Contains(page, "uPlot.iife.min.js") || !strings.Contains(page, `/static/ops.js`) {
		t.Fatalf("page without the chart library:\n%s", page)
	}
}
