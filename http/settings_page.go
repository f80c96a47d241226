package http

import (
	"html/template"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// settingsPage is the settings page: every setting in its category's
// section, with its description, source and whether it needs a restart.
// A sensitive value is never written into the page (its field is empty,
// saying whether one is set). settings.js saves what changed through
// POST /api/settings/bulk-update and resets through DELETE.
var settingsPage = template.Must(template.New("settings").Parse(pageHead + `
<link rel="stylesheet" href="/static/settings.css">
<title>Settings · docflow</title></head>
<body class="settings">` + pageBar + `
<main id="main">
<h1>Settings</h1>
<p class="muted">A value saved here is stored in the database and applies in every docflow process at once, above the environment and the built-in default; those marked <span class="tag restart">restart</span> apply after the processes restart. Empty fields are not saved: <em>Reset</em> returns a setting to the environment or the default.</p>
<form id="settings-form" novalidate aria-describedby="status">
<nav class="toc" aria-label="Categories"><ul>
{{range .Groups}}<li><a href="#cat-{{.ID}}">{{.Name}}</a></li>{{end}}
</ul></nav>
{{range .Groups}}<section class="category" id="cat-{{.ID}}" aria-labelledby="h-{{.ID}}">
<h2 id="h-{{.ID}}">{{.Name}}</h2>
{{range .Settings}}<div class="setting" id="row-{{.Key}}" data-key="{{.Key}}" data-type="{{.Type}}"{{if .Sensitive}} data-sensitive="true"{{end}}{{if .Suggestions}} data-suggest="true"{{end}}>
<div class="head"><label for="in-{{.Key}}"><code>{{.Key}}</code></label>
<span class="tag source" id="src-{{.Key}}" data-source="{{.Source}}">{{.Source}}</span>
{{if .RestartRequired}}<span class="tag restart" title="Applies after the processes restart">restart</span>{{end}}
{{if .Sensitive}}<span class="tag secret">secret</span>{{end}}</div>
<p class="desc" id="desc-{{.Key}}">{{.Description}}{{if and (not .Sensitive) .Default}} <span class="muted">Default: <code>{{.Default}}</code>.</span>{{end}}</p>
<div class="field">
{{if .EnvOnly}}<input id="in-{{.Key}}" type="text" value="{{if .Sensitive}}{{else}}{{.Value}}{{end}}" disabled aria-describedby="desc-{{.Key}} env-{{.Key}}"><p class="muted" id="env-{{.Key}}">Read from the environment before the database opens: set it there.</p>
{{else if .Sensitive}}<input id="in-{{.Key}}" type="password" autocomplete="new-password" value="" placeholder="{{if .Value}}set ({{.Source}}), hidden: type to replace{{else}}not set{{end}}" aria-describedby="desc-{{.Key}}">
{{else if eq .Type "boolean"}}<select id="in-{{.Key}}" aria-describedby="desc-{{.Key}}">{{if .Unset}}<option value="" selected>(not set)</option>{{end}}<option value="true"{{if .True}} selected{{end}}>true</option><option value="false"{{if .False}} selected{{end}}>false</option></select>
{{else if and (eq .Type "dropdown") .Options}}<select id="in-{{.Key}}" aria-describedby="desc-{{.Key}}">{{$v := .Value}}{{range .Options}}<option value="{{.}}"{{if eq . $v}} selected{{end}}>{{.}}</option>{{end}}</select>
{{else}}<input id="in-{{.Key}}" type="text" value="{{.Value}}" autocomplete="off" spellcheck="false"{{if .Numeric}} inputmode="decimal"{{end}}{{if .Suggestions}} list="list-{{.Key}}"{{end}} aria-describedby="desc-{{.Key}}">{{if .Suggestions}}<datalist id="list-{{.Key}}"></datalist>{{end}}
{{end}}{{if not .EnvOnly}}<button type="button" class="reset" data-key="{{.Key}}"{{if ne .Source "db"}} hidden{{end}}>Reset<span class="sr"> {{.Key}}</span></button>{{end}}
</div>
<p class="error" id="err-{{.Key}}" role="alert" hidden></p>
</div>
{{end}}</section>
{{end}}<div class="actions">
<button type="submit" id="save">Save changes</button>
<p id="status" role="status" aria-live="polite"></p>
</div>
</form>
</main>
<script src="/static/settings.js"></script>
</body></html>`))

type settingsPageView struct {
	CanSignOut, CanSignIn bool
	Groups                []settingsGroup
}

type settingsGroup struct {
	ID, Name string
	Settings []settingsRow
}

type settingsRow struct {
	settingView
	Unset, True, False, Numeric bool
}

// page renders /settings for an administrator; a visitor not signed in is
// sent to sign in first.
func (h *settingsHandlers) page(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	if u == nil {
		c.Response.Header.Set("Location", "/login?next="+url.QueryEscape("/settings"))
		c.SetStatusCode(fasthttp.StatusSeeOther)
		return nil
	}
	if !u.IsAdmin {
		return errAdminRequired
	}
	all, err := h.d.Store.List(RequestContext(c))
	if err != nil {
		return err
	}
	byCat := map[string]*settingsGroup{}
	var groups []*settingsGroup
	group := func(name string) *settingsGroup {
		if g, ok := byCat[name]; ok {
			return g
		}
		g := &settingsGroup{ID: strings.ToLower(strings.ReplaceAll(name, " ", "-")), Name: name}
		byCat[name] = g
		groups = append(groups, g)
		return g
	}
	for _, name := range docflow.SettingCategories {
		group(name)
	}
	for _, st := range all {
		v := h.view(st)
		row := settingsRow{settingView: v, Numeric: v.Type == "integer" || v.Type == "float" || v.Type == "slider"}
		if v.Type == "boolean" {
			switch strings.ToLower(strings.TrimSpace(v.Value)) {
			case "true", "1", "yes", "on", "y", "t":
				row.True = true
			case "false", "0", "no", "off", "n", "f":
				row.False = true
			default:
				row.Unset = true
			}
		}
		g := group(v.Category)
		g.Settings = append(g.Settings, row)
	}
	view := settingsPageView{CanSignOut: u.SessionID != ""}
	for _, g := range groups {
		if len(g.Settings) > 0 {
			view.Groups = append(view.Groups, *g)
		}
	}
	return renderPage(c, settingsPage, view)
}
