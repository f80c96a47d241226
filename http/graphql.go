package http

import (
	"context"
	"encoding/json"
	"html/template"
	"io/fs"

	"github.com/valyala/fasthttp"

	"docflow"
)

// GraphQL at /graphql: POST runs a request through the same middleware
// as every route (authentication by bearer token or session, the
// cross-site refusal, the rate limit), then hands it to the executor
// (package graphql) with the user; GET opens GraphiQL, served from the
// embedded static/vendor folder that make web fills.

// GraphQLDeps are the dependencies of /graphql.
type GraphQLDeps struct {
	// Execute runs one GraphQL request for u and appends the JSON of its
	// response to dst, answered with status 200 whatever its errors (an
	// error of its own is a 500). ctx carries the request for
	// GraphQLWrites.
	Execute func(ctx context.Context, dst []byte, u *docflow.User, query, operationName string, variables map[string]any) ([]byte, error)
}

// MountGraphQL registers POST and GET /graphql.
func (s *Server) MountGraphQL(d GraphQLDeps) {
	if d.Execute == nil {
		panic("http: MountGraphQL needs Execute")
	}
	h := &graphqlHandlers{s: s, d: d}
	s.Handle("POST", "/graphql", Route{Auth: AuthUser, Limit: LimitDefault}, h.execute, docGraphQL)
	s.Handle("GET", "/graphql", Route{Auth: AuthNone, Limit: LimitDefault}, h.playground, docGraphiQL)
}

type graphqlHandlers struct {
	s *Server
	d GraphQLDeps
}

// graphqlRequestKey carries the request's fasthttp ctx to GraphQLWrites.
type graphqlRequestKey struct{}

func (h *graphqlHandlers) execute(c *fasthttp.RequestCtx) error {
	var req struct {
		Query         *string         `json:"query"`
		OperationName *string         `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
		Extensions    json.RawMessage `json:"extensions"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Query == nil || *req.Query == "" {
		return invalid("query", "query is required: the GraphQL document to run")
	}
	// Variables are decoded without json.Number, as the executor
	// expects JSON's own types.
	var vars map[string]any
	if len(req.Variables) > 0 && string(req.Variables) != "null" {
		if err := json.Unmarshal(req.Variables, &vars); err != nil {
			return invalid("variables", "variables must be a JSON object")
		}
	}
	op := ""
	if req.OperationName != nil {
		op = *req.OperationName
	}
	ctx := context.WithValue(RequestContext(c), graphqlRequestKey{}, c)
	// The answer is written into the response's own (pooled) buffer.
	body, err := h.d.Execute(ctx, c.Response.SwapBody(nil)[:0], CurrentUser(c), *req.Query, op, vars)
	if err != nil {
		return err
	}
	c.Response.Header.SetContentType("application/json")
	c.SetStatusCode(fasthttp.StatusOK)
	c.Response.SwapBody(append(body, '\n'))
	return nil
}

// graphiqlScript is GraphiQL's bundle inside staticFiles, built by make
// (scripts/web.sh) into the git-ignored static/vendor folder.
var graphiqlScript = "static/vendor/graphiql.min.js"

var graphiqlPage = template.Must(template.New("graphiql").Parse(pageHead + `
{{if .Built}}<link rel="stylesheet" href="/static/vendor/graphiql.min.css">
<link rel="stylesheet" href="/static/graphiql-page.css">{{end}}
<title>GraphQL · docflow</title></head>
<body class="graphiql">
{{if .Built}}<div id="graphiql" role="main" aria-label="GraphiQL"><p class="notice">Loading GraphiQL…</p></div>
<script src="/static/vendor/react.production.min.js"></script>
<script src="/static/vendor/react-dom.production.min.js"></script>
<script src="/static/vendor/graphiql.min.js"></script>
<script src="/static/graphiql-page.js"></script>
{{else}}` + pageBar + `
<main id="main">
<h1>GraphQL</h1>
<p class="notice" role="status">GraphiQL is not built into this binary (run <code>make build</code>, which installs it with npm). The API itself works: POST a JSON body <code>{"query": "{ documents(limit: 10) { id originalFilename } }"}</code> to <code>/graphql</code>.</p>
</main>{{end}}
</body></html>`))

// graphiqlCSP is the page's Content-Security-Policy: the site's, but
// GraphiQL's editor sets style attributes in its markup, so inline styles
// (never scripts) are allowed here.
const graphiqlCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

func (h *graphqlHandlers) playground(c *fasthttp.RequestCtx) error {
	_, err := fs.Stat(staticFiles, graphiqlScript)
	c.Response.Header.Set("Content-Security-Policy", graphiqlCSP)
	return renderPage(c, graphiqlPage, map[string]any{"Built": err == nil, "CanSignIn": false, "CanSignOut": false})
}
