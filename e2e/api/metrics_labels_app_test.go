package api_test

import (
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"docflow/internal/app/apptest"
)

// TestInventedMethodsKeepMetricSeriesBounded: 400 requests with invented
// methods, to a route and to paths no route has, add a handful of series
// to /metrics, not one per method or path: the method is one of the
// standard ones or "other", the route a registered pattern or "other".
func TestInventedMethodsKeepMetricSeriesBounded(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Role: "api", Env: map[string]string{
		"AUTH_ENABLED": "true", "ADMIN_PASSWORD": "admin password", "METRICS_TOKEN": scrapeToken}})
	hc := &nethttp.Client{Timeout: 20 * time.Second}
	send := func(method, path string) int {
		t.Helper()
		req, err := nethttp.NewRequest(method, a.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body) //nolint:errcheck
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 400 {
		path := "/api/files"
		if i%2 == 1 {
			path = fmt.Sprintf("/zzz-no-route-%d", i)
		}
		if s := send(fmt.Sprintf("X%04d", i), path); s != 404 && s != 405 {
			t.Fatalf("request %d: %d", i, s)
		}
	}
	// Parameterised routes are recorded by their pattern.
	for i := range 20 {
		send("GET", fmt.Sprintf("/api/files/%d", 987650+i))
	}

	status, mfs := scrape(t, hc, a.URL, "Bearer "+scrapeToken)
	if status != 200 {
		t.Fatalf("/metrics: %d", status)
	}
	standard := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true, "other": true}
	series := 0
	for _, name := range []string{"docflow_http_requests_total", "docflow_http_request_duration_seconds"} {
		mf := mfs[name]
		if mf == nil {
			t.Fatalf("no %s", name)
		}
		for _, m := range mf.Metric {
			series++
			for _, l := range m.Label {
				switch v := l.GetValue(); l.GetName() {
				case "method":
					if !standard[v] {
						t.Fatalf("%s has the method label %q", name, v)
					}
				case "route":
					if strings.Contains(v, "zzz") || strings.Contains(v, "98765") || (v != "other" && !strings.HasPrefix(v, "/")) {
						t.Fatalf("%s has the route label %q: not a route pattern", name, v)
					}
				}
			}
		}
	}
	if series > 30 {
		t.Fatalf("%d request series after 400 invented methods", series)
	}
	if find(mfs, "docflow_http_requests_total", map[string]string{"method": "other", "route": "other", "status": "404"}) == nil ||
		find(mfs, "docflow_http_requests_total", map[string]string{"method": "other", "route": "other", "status": "405"}) == nil {
		t.Fatal("the invented methods are not counted under other")
	}
	if find(mfs, "docflow_http_requests_total", map[string]string{"method": "GET", "route": "/api/files/{file_id}"}) == nil {
		t.Fatal("no series for the pattern /api/files/{file_id}")
	}
	t.Logf("%d request series", series)
}
