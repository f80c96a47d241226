package http

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

// Doc documents one route: what /openapi.json says of it, beside what the
// route table already knows (method, path, authentication, rate limit,
// whether the body streams). It is the last argument of Server.Handle,
// written next to the handler; TestEveryRouteIsDocumented fails for a
// route without one. How to write one: docs/api.md, "Documenting a route".
type Doc struct {
	// Summary is one line, imperative ("List a file's shares").
	Summary string
	// Description is more, in Markdown (rights, what changes, limits).
	Description string
	// Tag groups the route in the reference (default: the path's section
	// after /api/, "Pages" outside /api).
	Tag string
	// Params are the query and header parameters, and path parameters
	// whose type is not the default (an integer for names ending in "id",
	// else a string).
	Params []Param
	// Body is the JSON request body: a value of the type the handler
	// decodes (tokenCreate{}, []int64{}). Multipart and Form are the other
	// kinds of body; NoBody says a POST, PUT, PATCH or DELETE reads none.
	Body      any
	Multipart []FormField
	Form      []FormField
	NoBody    bool
	// Responses are the route's answers other than errors, each with a
	// value of the type the handler writes (nil: no body).
	Responses []Response
	// Errors are the statuses of the route's own errors (404, 409…); those
	// its options imply (401, 403 for administrators, 413, 415, 422 for a
	// JSON body, 429) are added.
	Errors []int
	// Examples are requests that work on a fresh server (the example test
	// sends each and validates the answer against the document).
	Examples []Example
}

// Param is a query, header or path parameter.
type Param struct {
	Name string
	// In is "query" (default), "path" or "header".
	In string
	// Type is "string" (default), "integer", "number" or "boolean".
	Type     string
	Doc      string
	Required bool
	Default  any
	Min, Max any
	Enum     []string
	Example  any
}

// FormField is a field of a multipart or URL-encoded form.
type FormField struct {
	Name     string
	Doc      string
	File     bool
	Required bool
}

// Response is one answer of a route.
type Response struct {
	Status int
	// Body is a value of the type written (nil: none).
	Body any
	// ContentType is the body's type (default application/json, or for
	// Binary, a file's bytes, any type); set Binary for bytes that are not
	// JSON.
	ContentType string
	Binary      bool
	Doc         string
	// Headers names response headers and what they carry.
	Headers map[string]string
}

// Example is a request that the route answers on a fresh server.
type Example struct {
	// Name is the example's key (kebab-case).
	Name    string
	Summary string
	// Params are path and query values. Path values are placeholders the
	// example test replaces with a resource it made for the test.
	Params map[string]string
	// Body is the JSON request body.
	Body any
	// Status is the expected status (default: the first Response's).
	Status int
}

// OK, Created and NoContent are the common responses.
func OK(body any) Response      { return Response{Status: fasthttp.StatusOK, Body: body} }
func Created(body any) Response { return Response{Status: fasthttp.StatusCreated, Body: body} }
func NoContent() Response       { return Response{Status: fasthttp.StatusNoContent} }

// HTML is a page's answer.
func HTML(doc string) Response {
	return Response{Status: fasthttp.StatusOK, ContentType: "text/html; charset=utf-8", Binary: true, Doc: doc}
}

// Query is a query parameter.
func Query(name, typ, doc string) Param { return Param{Name: name, Type: typ, Doc: doc} }

// route is one registered route and its documentation.
type route struct {
	Method, Path string
	Opts         Route
	Doc          *Doc
}

var pathParam = regexp.MustCompile(`\{([^}:?]+)[^}]*\}`)

// documentable reports what a route's Doc lacks ("" when nothing).
func (r route) missing() string {
	d := r.Doc
	switch {
	case d == nil:
		return "no documentation"
	case strings.TrimSpace(d.Summary) == "":
		return "no summary"
	case len(d.Responses) == 0:
		return "no documented response"
	}
	switch r.Method {
	case "POST", "PUT", "PATCH":
		if d.Body == nil && d.Multipart == nil && d.Form == nil && !d.NoBody {
			return "no documented request body (Body, Multipart, Form, or NoBody: true)"
		}
	}
	for _, ex := range d.Examples {
		if ex.Name == "" {
			return "an example without a name"
		}
	}
	return ""
}

// Undocumented lists the routes whose documentation is missing or
// incomplete, as "METHOD /path: what is missing".
func (s *Server) Undocumented() []string {
	var out []string
	for _, r := range s.routes {
		if m := r.missing(); m != "" {
			out = append(out, r.Method+" "+r.Path+": "+m)
		}
	}
	sort.Strings(out)
	return out
}

// Routes returns the registered routes with their documentation (nil when
// none), in the order they were registered.
func (s *Server) Routes() []RouteInfo {
	out := make([]RouteInfo, 0, len(s.routes))
	for _, r := range s.routes {
		out = append(out, RouteInfo{Method: r.Method, Path: r.Path, Doc: r.Doc})
	}
	return out
}

// RouteInfo is a route as Routes lists it.
type RouteInfo struct {
	Method, Path string
	Doc          *Doc
}

// PathParams are the names of a route pattern's parameters.
func PathParams(path string) []string {
	var out []string
	for _, m := range pathParam.FindAllStringSubmatch(path, -1) {
		out = append(out, m[1])
	}
	return out
}

// mountOpenAPI registers the document.
func (s *Server) mountOpenAPI() {
	s.Handle("GET", "/openapi.json", Route{Auth: AuthNone, Limit: LimitNone}, s.openAPI, Doc{
		Summary:     "The OpenAPI 3.1 document of this API",
		Description: "Generated from the route table and the handlers' request and response types; `/docs` renders it.",
		Tag:         "Reference",
		Responses:   []Response{{Status: 200, Body: map[string]any{}, Doc: "The OpenAPI 3.1 document."}},
		Examples:    []Example{{Name: "document", Summary: "The whole document"}},
	})
}

func (s *Server) openAPI(c *fasthttp.RequestCtx) error {
	c.Response.Header.Set("Cache-Control", "no-cache")
	writeJSON(c, fasthttp.StatusOK, s.OpenAPI())
	return nil
}

// statusText is the description of an error status in the document.
func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return fmt.Sprintf("Status %d", code)
}

// operationIDs names each documented route ("METHOD path") uniquely: the
// method and the path's words after /api; a page outside /api whose name
// an API route has already (GET /settings beside GET /api/settings/) ends
// in "Page".
func operationIDs(routes []route) map[string]string {
	ids := map[string]string{}
	taken := map[string]bool{}
	for _, pass := range []bool{true, false} {
		for _, r := range routes {
			if r.Doc == nil || strings.HasPrefix(r.Path, "/api/") != pass {
				continue
			}
			id := operationID(r.Method, r.Path)
			if taken[id] {
				id += "Page"
			}
			for n := 2; taken[id]; n++ {
				id = operationID(r.Method, r.Path) + "Page" + strconv.Itoa(n)
			}
			taken[id] = true
			ids[r.Method+" "+r.Path] = id
		}
	}
	return ids
}

// operationID is a route's name: the method and the path's words.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	up := true
	for _, r := range strings.TrimPrefix(path, "/api") {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			if up {
				b.WriteString(strings.ToUpper(string(r)))
			} else {
				b.WriteRune(r)
			}
			up = false
			continue
		}
		up = true
	}
	return b.String()
}

var methodOrder = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

func methodRank(m string) int {
	if i := slices.Index(methodOrder, m); i >= 0 {
		return i
	}
	return len(methodOrder)
}
