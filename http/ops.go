package http

import (
	"html/template"
	"io/fs"
	"net/url"

	"github.com/valyala/fasthttp"

	"docflow"
)

// chartLibrary is the chart library's script inside staticFiles, built by
// make (scripts/web.sh) into the git-ignored static/vendor folder.
var chartLibrary = "static/vendor/uPlot.iife.min.js"

var opsPage = template.Must(template.New("ops").Parse(pageHead + `
{{if .Charts}}<link rel="stylesheet" href="/static/vendor/uPlot.min.css">{{end}}
<link rel="stylesheet" href="/static/ops.css">
<title>Operations · docflow</title></head>
<body class="ops">` + pageBar + `
<main id="main" class="wide">
<h1>Operations</h1>
{{if not .Charts}}<p class="notice" id="no-charts" role="status">The chart library is not built into this binary (run <code>make build</code>, which installs it with npm): the figures below are shown as tables only.</p>{{end}}
<form id="controls" class="controls" aria-label="Time range">
<label for="range">Time range</label>
<select id="range" name="range">
<option value="900">Last 15 minutes</option>
<option value="3600" selected>Last hour</option>
<option value="21600">Last 6 hours</option>
<option value="86400">Last 24 hours</option>
<option value="604800">Last 7 days</option>
<option value="2592000">Last 30 days</option>
</select>
<label class="check"><input type="checkbox" id="auto" checked> Refresh every 5 s</label>
<button type="submit" id="refresh">Refresh now</button>
<p id="status" class="muted" role="status" aria-live="polite">Loading…</p>
</form>

<div class="grid">
<section aria-labelledby="h-throughput">
<h2 id="h-throughput">Throughput</h2>
<p class="muted">Documents taken in, finished and failed per bucket.</p>
<div class="chart" id="chart-throughput" role="img" aria-label="Documents in, out and failed over time"></div>
<p class="totals" id="totals-overview"></p>
</section>

<section aria-labelledby="h-latency">
<h2 id="h-latency">End-to-end latency</h2>
<p class="muted">Percentiles of the time from intake to a run's end, in milliseconds.</p>
<div class="chart" id="chart-latency" role="img" aria-label="End-to-end latency percentiles over time"></div>
</section>

<section aria-labelledby="h-steps">
<h2 id="h-steps">Steps</h2>
<p class="muted">95th percentile of each step type's duration, in milliseconds.</p>
<div class="chart" id="chart-steps" role="img" aria-label="p95 duration per step type over time"></div>
<div class="table-wrap"><table id="table-steps">
<caption class="sr">Step types in the range</caption>
<thead><tr><th scope="col">Step</th><th scope="col">Attempts</th><th scope="col">Error rate</th><th scope="col">p50 ms</th><th scope="col">p95 ms</th><th scope="col">p99 ms</th><th scope="col">Queue wait p95 ms</th></tr></thead>
<tbody></tbody></table></div>
</section>

<section aria-labelledby="h-errors">
<h2 id="h-errors">Errors</h2>
<div class="chart" id="chart-errors" role="img" aria-label="Failures per error class over time"></div>
<div class="table-wrap"><table id="table-errors">
<caption class="sr">Error classes in the range, most frequent first</caption>
<thead><tr><th scope="col">Error class</th><th scope="col">Step</th><th scope="col">Count</th><th scope="col">Last seen</th><th scope="col">Documents</th></tr></thead>
<tbody></tbody></table></div>
</section>

<section aria-labelledby="h-backlog">
<h2 id="h-backlog">Backlog and lag</h2>
<p class="muted">Documents waiting in the pipeline, and messages each topic's consumers are behind.</p>
<div class="chart" id="chart-backlog" role="img" aria-label="Backlog and consumer lag per topic over time"></div>
</section>

<section aria-labelledby="h-intake">
<h2 id="h-intake">Intake by channel</h2>
<div class="chart" id="chart-intake" role="img" aria-label="Documents taken in per channel over time"></div>
</section>

<section aria-labelledby="h-requests">
<h2 id="h-requests">HTTP requests</h2>
<div class="chart" id="chart-requests" role="img" aria-label="Requests, server errors and p99 latency over time"></div>
</section>

<section aria-labelledby="h-workers">
<h2 id="h-workers">Worker resources</h2>
<div class="chart" id="chart-workers" role="img" aria-label="Resident memory of each process"></div>
<div class="table-wrap"><table id="table-workers" class="stack">
<caption class="sr">Processes and their latest sample</caption>
<thead><tr><th scope="col">Process</th><th scope="col">Role</th><th scope="col">CPU %</th><th scope="col">Memory MiB</th><th scope="col">Goroutines</th><th scope="col">Metrics dropped</th><th scope="col">Last seen</th></tr></thead>
<tbody></tbody></table></div>
</section>
</div>
</main>
{{if .Charts}}<script src="/static/vendor/uPlot.iife.min.js"></script>{{end}}
<script src="/static/ops.js"></script>
</body></html>`))

type opsView struct {
	CanSignOut, CanSignIn bool
	// Charts: the chart library was built into the binary.
	Charts bool
}

// mountOps registers the operations page /ops (administrators) and the
// built front-end files it loads.
func (s *Server) mountOps() {
	s.Handle("GET", "/ops", Route{Auth: AuthNone}, s.ops, docOpsPage)
	s.Handle("GET", "/static/vendor/{name}", Route{Auth: AuthNone, Limit: LimitNone}, serveVendor, docStatic)
}

// ops is the live operations page. Its script reads /api/analytics/* every
// 5 s; a visitor who is not signed in is sent to sign in first.
func (s *Server) ops(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	if u == nil {
		c.Response.Header.Set("Location", "/login?next="+url.QueryEscape("/ops"))
		c.SetStatusCode(fasthttp.StatusSeeOther)
		return nil
	}
	if !u.IsAdmin {
		return errAdminRequired
	}
	_, err := fs.Stat(staticFiles, chartLibrary)
	return renderPage(c, opsPage, opsView{CanSignOut: u.SessionID != "", Charts: err == nil})
}

// serveVendor serves one built file of static/vendor (README.md is the
// folder's committed placeholder, not an asset).
func serveVendor(c *fasthttp.RequestCtx) error {
	name, _ := c.UserValue("name").(string)
	if name == "README.md" {
		return docflow.Errorf(docflow.ENOTFOUND, "Not Found")
	}
	return serveEmbedded(c, "static/vendor/", name)
}
