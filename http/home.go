package http

import (
	"embed"
	"html/template"
	"io/fs"
	"mime"
	"net/url"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// staticFiles are the files the pages link (styles); pages carry no inline
// style or script, as the Content-Security-Policy requires.
//
//go:embed static
var staticFiles embed.FS

// pageHead is the start of every page: a phone-sized viewport and the
// shared stylesheet.
const pageHead = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/static/docflow.css">`

// pageBar is the header with the site's links; .User decides sign in or out.
const pageBar = `<a class="skip" href="#main">Skip to content</a>
<header class="bar"><a class="brand" href="/">docflow</a>
<nav aria-label="Main"><ul>
<li><a href="/">Documents</a></li>
<li><a href="/status">Status</a></li>
<li><a href="/docs">API reference</a></li>
<li><a href="/ops">Operations</a></li>
<li><a href="/settings">Settings</a></li>
<li><a href="/api/diagnostic/health">Health (JSON)</a></li>
{{if .CanSignOut}}<li><form method="post" action="/logout"><button type="submit" class="link">Sign out</button></form></li>
{{else if .CanSignIn}}<li><a href="/login">Sign in</a></li>{{end}}
</ul></nav></header>`

var homePage = template.Must(template.New("home").Parse(pageHead + `<title>docflow</title></head>
<body>` + pageBar + `
<main id="main">
<h1>docflow</h1>
<section aria-labelledby="who">
<h2 id="who">Who you are</h2>
{{if .SingleUser}}<p>Single-user mode: no sign-in is needed (<code>AUTH_ENABLED</code> is false), and everyone who can reach this address acts as the administrator.</p>
{{else}}<p>Signed in as <strong>{{.Name}}</strong>{{if ne .Name .ID}} (<code>{{.ID}}</code>){{end}}{{if .Admin}}, administrator{{end}}{{if .ViaToken}}, with an API token{{end}}.</p>
{{end}}</section>
{{if .Notices}}<section aria-labelledby="notices" class="notices">
<h2 id="notices">For the administrator to review</h2>
<ul>{{range .Notices}}<li>{{.}}</li>
{{end}}</ul>
</section>
{{end}}<section aria-labelledby="health">
<h2 id="health">Health: {{.Status}}</h2>
<div class="table-wrap"><table>
<thead><tr><th scope="col">Check</th><th scope="col">Status</th>{{if .Admin}}<th scope="col">Detail</th>{{end}}</tr></thead>
<tbody>{{range .Checks}}<tr><td>{{.Name}}</td><td class="status-{{.Status}}">{{.Status}}</td>{{if $.Admin}}<td>{{.Detail}}</td>{{end}}</tr>
{{else}}<tr><td colspan="3">No checks configured.</td></tr>{{end}}</tbody>
</table></div>
<p class="muted">docflow {{.Version}} · <a href="/api/diagnostic/health">health as JSON</a></p>
</section>
<section aria-labelledby="api">
<h2 id="api">Using the API</h2>
<ul>
<li><a href="/docs">API reference</a>: every endpoint this server answers.</li>
<li>API tokens for scripts and apps: <code>POST /api/api-tokens/</code> with <code>{"name": "…"}</code>; send the token as <code>Authorization: Bearer dfl_…</code>.</li>
<li>Upload a document: <code>POST /api/upload</code> (multipart field <code>file</code>); follow it with <code>GET /api/files</code>.</li>
{{if .CanSignOut}}<li>The docflow phone app: <a href="/qr-login">sign it in with a QR code</a>.</li>
{{end}}</ul>
</section>
</main></body></html>`))

var docsPage = template.Must(template.New("docs").Parse(pageHead + `
{{if .Renderer}}<link rel="stylesheet" href="/static/vendor/swagger-ui.css">{{end}}
<title>API reference · docflow</title></head>
<body>` + pageBar + `
<main id="main" class="api-docs">
<h1>API reference</h1>
<p>The OpenAPI 3.1 document of this server: <a href="/openapi.json">/openapi.json</a>. Bodies are JSON (<code>Content-Type: application/json</code>) unless an upload says multipart; errors are <code>{"detail": "…"}</code>.</p>
{{if .Renderer}}<div id="swagger-ui"></div>
{{else}}<p class="notice" id="no-renderer" role="status">The interactive reference is not built into this binary (run <code>make build</code>, which installs its renderer with npm): below is every route this server answers.</p>
{{range .Groups}}<section aria-labelledby="g-{{.ID}}">
<h2 id="g-{{.ID}}">{{.Title}}</h2>
<div class="table-wrap"><table>
<thead><tr><th scope="col">Method</th><th scope="col">Path</th></tr></thead>
<tbody>{{range .Routes}}<tr><td class="method">{{.Method}}</td><td><code>{{.Path}}</code></td></tr>
{{end}}</tbody></table></div>
</section>
{{end}}{{end}}</main>
{{if .Renderer}}<script src="/static/vendor/swagger-ui-bundle.js"></script>
<script src="/static/apidocs.js"></script>{{end}}
</body></html>`))

type checkRow struct{ Name, Status, Detail string }

type homeView struct {
	SingleUser, Admin, ViaToken, CanSignOut, CanSignIn bool
	Name, ID, Status, Version                          string
	Checks                                             []checkRow
	// Notices are Config.AdminNotices, for administrators only.
	Notices []string
}

type routeRow struct{ Method, Path string }

type routeGroup struct {
	ID, Title string
	Routes    []routeRow
}

type docsView struct {
	CanSignOut, CanSignIn bool
	// Renderer: the reference's renderer was built into the binary.
	Renderer bool
	Groups   []routeGroup
}

// apiRenderer is the /docs page's renderer inside staticFiles, built by
// make (scripts/web.sh) into the git-ignored static/vendor folder.
var apiRenderer = "static/vendor/swagger-ui-bundle.js"

// mountHome registers the status page (who you are, the health checks,
// the administrator's notices), the API reference, the static files the
// pages use, /ops and the web application (app.go), whose documents page
// is / (where a sign-in lands).
func (s *Server) mountHome() {
	page := Route{Auth: AuthNone}
	s.Handle("GET", "/status", page, s.home, docHome)
	s.Handle("GET", "/docs", page, s.docs, docDocsPage)
	s.Handle("GET", "/static/{name}", Route{Auth: AuthNone, Limit: LimitNone}, serveStatic, docStatic)
	s.mountOps()
	s.mountApp()
}

func (s *Server) home(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	if u == nil {
		// NOTE: a relative Location: never one built from the Host header.
		c.Response.Header.Set("Location", "/login?next="+url.QueryEscape("/status"))
		c.SetStatusCode(fasthttp.StatusSeeOther)
		return nil
	}
	checks, critOK, allOK := s.runChecks(RequestContext(c))
	status, _ := healthStatus(critOK, allOK)
	v := homeView{SingleUser: u.Anonymous, Admin: u.IsAdmin, ViaToken: !u.Anonymous && u.SessionID == "",
		CanSignOut: u.SessionID != "", Name: u.DisplayName, ID: u.ID, Status: status, Version: s.cfg.Version}
	if v.Name == "" {
		v.Name = u.ID
	}
	if u.IsAdmin && s.cfg.AdminNotices != nil {
		v.Notices = s.cfg.AdminNotices(RequestContext(c))
	}
	for name, r := range checks {
		row := checkRow{Name: name, Status: r.Status}
		// What failed (a driver's message names the database user and
		// host) is for administrators.
		if u.IsAdmin {
			row.Detail = r.Detail
		}
		v.Checks = append(v.Checks, row)
	}
	sort.Slice(v.Checks, func(i, j int) bool { return v.Checks[i].Name < v.Checks[j].Name })
	return renderPage(c, homePage, v)
}

// docs renders /openapi.json interactively; without the renderer built in,
// it lists the routes registered on the router, grouped by the part of the
// path after /api/.
func (s *Server) docs(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	v := docsView{CanSignOut: u != nil && u.SessionID != "", CanSignIn: u == nil}
	if _, err := fs.Stat(staticFiles, apiRenderer); err == nil {
		v.Renderer = true
		// NOTE: the renderer styles elements inline; scripts stay this
		// site's files only.
		c.Response.Header.Set("Content-Security-Policy", docsContentSecurityPolicy)
		return renderPage(c, docsPage, v)
	}
	byGroup := map[string][]routeRow{}
	for method, paths := range s.router.List() {
		for _, p := range paths {
			byGroup[routeGroupOf(p)] = append(byGroup[routeGroupOf(p)], routeRow{Method: method, Path: p})
		}
	}
	names := make([]string, 0, len(byGroup))
	for g := range byGroup {
		names = append(names, g)
	}
	slices.Sort(names)
	order := map[string]int{"GET": 0, "POST": 1, "PUT": 2, "PATCH": 3, "DELETE": 4}
	for _, g := range names {
		rows := byGroup[g]
		sort.Slice(rows, func(i, j int) bool {
			if rows[i].Path != rows[j].Path {
				return rows[i].Path < rows[j].Path
			}
			return order[rows[i].Method] < order[rows[j].Method]
		})
		title := g
		if g == "" {
			title = "Pages"
		}
		v.Groups = append(v.Groups, routeGroup{ID: strings.ReplaceAll(title, " ", "-"), Title: title, Routes: rows})
	}
	return renderPage(c, docsPage, v)
}

// routeGroupOf names a route's section: the segment after /api/ ("files",
// "routing-rules"…), or "" for pages outside /api.
func routeGroupOf(p string) string {
	rest, ok := strings.CutPrefix(p, "/api/")
	if !ok {
		return ""
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

func renderPage(c *fasthttp.RequestCtx, t *template.Template, v any) error {
	c.Response.Header.SetContentType("text/html; charset=utf-8")
	c.Response.Header.Set("Cache-Control", "no-store")
	c.SetStatusCode(fasthttp.StatusOK)
	return t.Execute(c, v)
}

// serveStatic serves one embedded file by name (a single path segment, so
// nothing outside the folder can be named).
func serveStatic(c *fasthttp.RequestCtx) error {
	name, _ := c.UserValue("name").(string)
	return serveEmbedded(c, "static/", name)
}

// serveEmbedded serves the embedded file dir+name; name must be one path
// segment.
func serveEmbedded(c *fasthttp.RequestCtx, dir, name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return docflow.Errorf(docflow.ENOTFOUND, "Not Found")
	}
	b, err := fs.ReadFile(staticFiles, dir+name)
	if err != nil {
		return docflow.Errorf(docflow.ENOTFOUND, "Not Found")
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	c.Response.Header.SetContentType(ct)
	c.Response.Header.Set("Cache-Control", "public, max-age=3600")
	writeCompressed(c, dir+name, b)
	return nil
}
