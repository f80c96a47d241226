package http

import (
	"bytes"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/url"

	"github.com/valyala/fasthttp"

	"docflow"
)

// appPages are the paths the web application (web/app, built by make web
// into static/app) draws in the browser: each answers the application's
// page, whose client router shows the page the path names. A page added
// to web/app/src/routes.js gets its path here too.
var appPages = []string{
	"/",
	"/files/{id}",
	"/pipelines",
	"/rules",
	"/integrations",
	"/webhooks",
	"/tokens",
	"/users",
	"/audit",
}

// appIndex is the built application's page inside staticFiles; appAssets
// the folder of its scripts and styles (content-hashed names).
const (
	appIndex  = "static/app/index.html"
	appAssets = "static/app/assets/"
)

// appMissingPage stands in for the application when the binary was built
// without its assets (go build alone).
var appMissingPage = template.Must(template.New("app-missing").Parse(pageHead + `<title>docflow</title></head>
<body>` + pageBar + `
<main id="main">
<h1>docflow</h1>
<p class="notice" role="status">The web pages are not built into this binary. Run <code>make web</code> (it installs them with npm from <code>web/app</code>) and build again, or <code>make build</code>, which does both.</p>
<p>Meanwhile: <a href="/status">the service's status</a>, <a href="/docs">the API reference</a>.</p>
</main></body></html>`))

// appSession is what the application's page tells its scripts about the
// signed-in user (web/app/src/lib/session.js reads it).
type appSession struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Admin      bool   `json:"admin"`
	SingleUser bool   `json:"single_user"`
	CanSignOut bool   `json:"can_sign_out"`
	Version    string `json:"version"`
}

// mountApp registers the application's page routes and its assets.
func (s *Server) mountApp() {
	for _, p := range appPages {
		s.Handle("GET", p, Route{Auth: AuthNone}, s.appPage, docAppPage)
	}
	s.Handle("GET", "/static/app/assets/{name}", Route{Auth: AuthNone, Limit: LimitNone}, serveAppAsset, docAppAsset)
}

// appPage answers a page route with the application's page and the
// signed-in user in a meta element; a visitor who is not signed in is
// sent to sign in first, and back here afterwards.
func (s *Server) appPage(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	if u == nil {
		// NOTE: a relative Location: never one built from the Host header.
		c.Response.Header.Set("Location", "/login?next="+url.QueryEscape(string(c.URI().RequestURI())))
		c.SetStatusCode(fasthttp.StatusSeeOther)
		return nil
	}
	page, err := fs.ReadFile(staticFiles, appIndex)
	if err != nil {
		return renderPage(c, appMissingPage, docsView{CanSignOut: u.SessionID != ""})
	}
	sess := appSession{ID: u.ID, Name: u.DisplayName, Admin: u.IsAdmin, SingleUser: u.Anonymous,
		CanSignOut: u.SessionID != "", Version: s.cfg.Version}
	if sess.Name == "" {
		sess.Name = u.ID
	}
	js, err := json.Marshal(sess)
	if err != nil {
		return docflow.Errorf(docflow.EINTERNAL, "encoding the session: %v", err)
	}
	meta := `<meta name="docflow-session" content="` + template.HTMLEscapeString(string(js)) + `">` + "\n"
	i := bytes.Index(page, []byte("</head>"))
	if i < 0 {
		return docflow.Errorf(docflow.EINTERNAL, "the built %s has no </head>: run make web again", appIndex)
	}
	out := make([]byte, 0, len(page)+len(meta))
	out = append(append(append(out, page[:i]...), meta...), page[i:]...)
	c.Response.Header.SetContentType("text/html; charset=utf-8")
	c.Response.Header.Set("Cache-Control", "no-store")
	writeCompressed(c, "", out)
	return nil
}

// serveAppAsset serves one built script or style. Their names carry a
// hash of their content, so browsers may keep them for good.
func serveAppAsset(c *fasthttp.RequestCtx) error {
	name, _ := c.UserValue("name").(string)
	if err := serveEmbedded(c, appAssets, name); err != nil {
		return err
	}
	c.Response.Header.Set("Cache-Control", "public, max-age=31536000, immutable")
	return nil
}
