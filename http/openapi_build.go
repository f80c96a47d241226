package http

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"docflow"
)

// OpenAPI builds the OpenAPI 3.1 document of the routes registered so far.
// Limits are the settings' values now.
func (s *Server) OpenAPI() map[string]any {
	reg := newSchemaRegistry()
	reg.components["Error"] = reg.object(reflect.TypeFor[errorBody](), false, 0)
	reg.names[reflect.TypeFor[errorBody]()], reg.taken["Error"] = "Error", reflect.TypeFor[errorBody]()
	paths := map[string]any{}
	tags := map[string]bool{}
	ids := operationIDs(s.routes)
	for _, r := range s.routes {
		if r.Doc == nil {
			continue
		}
		item, _ := paths[r.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[r.Path] = item
		}
		op := s.operation(reg, r)
		op["operationId"] = ids[r.Method+" "+r.Path]
		tags[op["tags"].([]any)[0].(string)] = true
		item[strings.ToLower(r.Method)] = op
	}
	tagList := make([]string, 0, len(tags))
	for t := range tags {
		tagList = append(tagList, t)
	}
	sort.Strings(tagList)
	var tagObjs []any
	for _, t := range tagList {
		tagObjs = append(tagObjs, map[string]any{"name": t})
	}
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
		"info": map[string]any{
			"title":       "docflow API",
			"version":     s.versionOrDev(),
			"description": s.apiDescription(),
			"license":     map[string]any{"name": "Proprietary", "identifier": "LicenseRef-docflow"},
		},
		"servers": []any{map[string]any{"url": "/", "description": "this server"}},
		"tags":    tagObjs,
		"paths":   paths,
		"components": map[string]any{
			"schemas":   reg.components,
			"responses": errorResponses(),
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": docflow.TokenPrefix + "…",
					"description": "An API token (POST /api/api-tokens/) as `Authorization: Bearer " + docflow.TokenPrefix + "…`."},
				"session": map[string]any{"type": "apiKey", "in": "cookie", "name": SessionCookie,
					"description": "The browser session cookie set by signing in at /login or by single sign-on. Writes with it must come from this site (same origin)."},
			},
		},
	}
}

func (s *Server) versionOrDev() string {
	if s.cfg.Version == "" {
		return "dev"
	}
	return s.cfg.Version
}

// apiDescription is the document's introduction: authentication, the
// error model and the limits in force.
func (s *Server) apiDescription() string {
	st := s.cfg.Settings
	return fmt.Sprintf(`docflow ingests documents, runs them through processing pipelines and lets people find, share, comment on and annotate them.

## Authentication
With AUTH_ENABLED=false (single-user mode) no credentials are needed and the caller is the administrator. Otherwise send an API token as `+"`Authorization: Bearer %s…`"+` (create one at POST /api/api-tokens/) or, in a browser, the `+"`%s`"+` session cookie set by signing in. Routes marked for administrators answer 403 to others.

## Errors
Every error is a JSON object `+"`{\"detail\": \"…\"}`"+` whose detail says what to do; a validation error (422) also lists the fields: `+"`{\"detail\": …, \"errors\": [{\"field\": …, \"message\": …}]}`"+`. 401 carries `+"`WWW-Authenticate: Bearer`"+`, 429 carries `+"`Retry-After`"+` (seconds).

## Limits (this server's settings now)
- JSON bodies: at most %d bytes (MAX_REQUEST_BODY_SIZE); uploads at most %d bytes (MAX_UPLOAD_SIZE); larger ones get 413.
- Rate limits, per user when signed in and per client address otherwise, counted across every api process (RATE_LIMITING_ENABLED=%t): %s for most routes (RATE_LIMIT_DEFAULT), %s for uploads (RATE_LIMIT_UPLOAD), %s for sign-in (RATE_LIMIT_AUTH). Each route says its class; over it, 429 with Retry-After.
- Uploads per signed-in user: %d per %d s (UPLOAD_RATE_LIMIT_PER_USER, UPLOAD_RATE_LIMIT_WINDOW), fewer under load.`,
		docflow.TokenPrefix, SessionCookie,
		docflow.MaxRequestBodySize.Get(st), docflow.MaxUploadSize.Get(st), docflow.RateLimitingEnabled.Get(st),
		docflow.RateLimitDefault.Get(st), docflow.RateLimitUpload.Get(st), docflow.RateLimitAuth.Get(st),
		docflow.UploadRateLimitPerUser.Get(st), docflow.UploadRateLimitWindow.Get(st))
}

// errorStatuses are the error responses the document names, each a
// component referenced by its status.
var errorStatuses = []int{400, 401, 403, 404, 408, 409, 413, 415, 422, 429, 500, 501, 502, 503}

func errorResponses() map[string]any {
	out := map[string]any{}
	for _, code := range errorStatuses {
		r := map[string]any{
			"description": statusText(code),
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}},
		}
		switch code {
		case 401:
			r["headers"] = map[string]any{"WWW-Authenticate": map[string]any{"description": "Bearer", "schema": map[string]any{"type": "string"}}}
		case 429:
			r["headers"] = map[string]any{"Retry-After": map[string]any{"description": "Seconds to wait before trying again", "schema": map[string]any{"type": "integer"}}}
		}
		out[strconv.Itoa(code)] = r
	}
	return out
}

// operation is one route's operation object.
func (s *Server) operation(reg *schemaRegistry, r route) map[string]any {
	d := r.Doc
	tag := d.Tag
	if tag == "" {
		tag = routeGroupOf(r.Path)
		if tag == "" {
			tag = "Pages"
		}
	}
	op := map[string]any{
		"summary": d.Summary,
		"tags":    []any{tag},
	}
	desc := strings.TrimSpace(d.Description)
	if extra := s.routeNotes(r); extra != "" {
		if desc != "" {
			desc += "\n\n"
		}
		desc += extra
	}
	if desc != "" {
		op["description"] = desc
	}
	op["security"] = security(r.Opts.Auth)
	if params := parameters(r, d); len(params) > 0 {
		op["parameters"] = params
	}
	if body := requestBody(reg, d); body != nil {
		op["requestBody"] = body
	}
	op["responses"] = responses(reg, r)
	if lim := limitSetting(r.Opts.Limit); lim != nil {
		op["x-rate-limit"] = map[string]any{"setting": lim.Key(), "limit": lim.Get(s.cfg.Settings)}
	}
	return op
}

func limitSetting(l Limit) *docflow.StringSetting {
	switch l {
	case LimitDefault:
		return &docflow.RateLimitDefault
	case LimitUpload:
		return &docflow.RateLimitUpload
	case LimitAuth:
		return &docflow.RateLimitAuth
	}
	return nil
}

// routeNotes says what the route table knows: who may call it, its rate
// limit class and its body limit.
func (s *Server) routeNotes(r route) string {
	var notes []string
	switch r.Opts.Auth {
	case AuthNone:
		notes = append(notes, "No credentials needed.")
	case AuthUser:
		notes = append(notes, "Signed-in users (API token or session; anyone in single-user mode).")
	case AuthAdmin:
		notes = append(notes, "Administrators only (everyone in single-user mode).")
	case AuthToken:
		notes = append(notes, "An API token is required, also in single-user mode.")
	case AuthSession:
		notes = append(notes, "A browser session is required.")
	case AuthMetrics:
		notes = append(notes, "METRICS_TOKEN as a bearer token when set, else administrators.")
	}
	if lim := limitSetting(r.Opts.Limit); lim != nil {
		notes = append(notes, fmt.Sprintf("Rate limit: %s (%s now).", lim.Key(), lim.Get(s.cfg.Settings)))
	}
	if r.Doc.Body != nil || r.Doc.Form != nil {
		notes = append(notes, fmt.Sprintf("Body: at most MAX_REQUEST_BODY_SIZE (%d bytes now).", docflow.MaxRequestBodySize.Get(s.cfg.Settings)))
	}
	if r.Doc.Multipart != nil {
		notes = append(notes, fmt.Sprintf("Upload: at most MAX_UPLOAD_SIZE (%d bytes now).", docflow.MaxUploadSize.Get(s.cfg.Settings)))
	}
	return strings.Join(notes, " ")
}

// security is the operation's security requirement: optional credentials
// ({} first) where none are needed.
func security(a Auth) []any {
	bearer := map[string]any{"bearer": []any{}}
	session := map[string]any{"session": []any{}}
	switch a {
	case AuthNone:
		return []any{map[string]any{}}
	case AuthToken, AuthMetrics:
		return []any{bearer}
	case AuthSession:
		return []any{session}
	}
	return []any{bearer, session}
}

func parameters(r route, d *Doc) []any {
	var out []any
	declared := map[string]Param{}
	for _, p := range d.Params {
		declared[p.Name] = p
	}
	for _, name := range PathParams(r.Path) {
		p, ok := declared[name]
		if !ok {
			p = Param{Name: name, Type: "string"}
			if name == "id" || strings.HasSuffix(name, "_id") {
				p.Type = "integer"
				p.Min = 1
			}
		}
		p.In, p.Required = "path", true
		out = append(out, paramObject(p, d.Examples))
	}
	for _, p := range d.Params {
		if p.In == "path" || slices.Contains(PathParams(r.Path), p.Name) {
			continue
		}
		if p.In == "" {
			p.In = "query"
		}
		out = append(out, paramObject(p, d.Examples))
	}
	return out
}

func paramObject(p Param, examples []Example) map[string]any {
	typ := p.Type
	if typ == "" {
		typ = "string"
	}
	schema := map[string]any{"type": typ}
	if p.Default != nil {
		schema["default"] = p.Default
	}
	if p.Min != nil {
		schema["minimum"] = p.Min
	}
	if p.Max != nil {
		schema["maximum"] = p.Max
	}
	if len(p.Enum) > 0 {
		vals := make([]any, len(p.Enum))
		for i, v := range p.Enum {
			vals[i] = v
		}
		schema["enum"] = vals
	}
	o := map[string]any{"name": p.Name, "in": p.In, "schema": schema}
	if p.Doc != "" {
		o["description"] = p.Doc
	}
	if p.Required {
		o["required"] = true
	}
	if p.Example != nil {
		o["example"] = p.Example
	}
	exs := map[string]any{}
	for _, ex := range examples {
		if v, ok := ex.Params[p.Name]; ok {
			exs[ex.Name] = map[string]any{"summary": ex.Summary, "value": typedValue(typ, v)}
		}
	}
	if len(exs) > 0 && p.Example == nil {
		o["examples"] = exs
	}
	return o
}

// typedValue is an example's parameter value in its schema's type.
func typedValue(typ, v string) any {
	switch typ {
	case "integer":
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	case "number":
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	case "boolean":
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

func requestBody(reg *schemaRegistry, d *Doc) map[string]any {
	switch {
	case d.Body != nil:
		media := map[string]any{"schema": reg.requestSchema(d.Body)}
		exs := map[string]any{}
		for _, ex := range d.Examples {
			if ex.Body != nil {
				exs[ex.Name] = map[string]any{"summary": ex.Summary, "value": ex.Body}
			}
		}
		if len(exs) > 0 {
			media["examples"] = exs
		}
		return map[string]any{"required": true, "content": map[string]any{"application/json": media}}
	case d.Multipart != nil:
		return map[string]any{"required": true, "content": map[string]any{"multipart/form-data": map[string]any{"schema": formSchema(d.Multipart)}}}
	case d.Form != nil:
		return map[string]any{"required": true, "content": map[string]any{"application/x-www-form-urlencoded": map[string]any{"schema": formSchema(d.Form)}}}
	}
	return nil
}

func formSchema(fields []FormField) map[string]any {
	props := map[string]any{}
	var req []any
	for _, f := range fields {
		s := map[string]any{"type": "string"}
		if f.File {
			s["contentMediaType"] = "application/octet-stream"
		}
		if f.Doc != "" {
			s["description"] = f.Doc
		}
		props[f.Name] = s
		if f.Required {
			req = append(req, f.Name)
		}
	}
	o := map[string]any{"type": "object", "properties": props}
	if len(req) > 0 {
		o["required"] = req
	}
	return o
}

// responses are the route's documented answers and the errors it and its
// options give.
func responses(reg *schemaRegistry, r route) map[string]any {
	d := r.Doc
	out := map[string]any{}
	for _, resp := range d.Responses {
		o := map[string]any{"description": resp.Doc}
		if resp.Doc == "" {
			o["description"] = statusText(resp.Status)
		}
		ct := resp.ContentType
		switch {
		case resp.Binary:
			if ct == "" {
				ct = "*/*" // a file under its own MIME type
			}
			o["content"] = map[string]any{ct: map[string]any{}}
		case resp.Body != nil:
			if ct == "" {
				ct = "application/json"
			}
			o["content"] = map[string]any{ct: map[string]any{"schema": reg.responseSchema(resp.Body)}}
		}
		if len(resp.Headers) > 0 {
			hs := map[string]any{}
			for name, doc := range resp.Headers {
				hs[name] = map[string]any{"description": doc, "schema": map[string]any{"type": "string"}}
			}
			o["headers"] = hs
		}
		out[strconv.Itoa(resp.Status)] = o
	}
	errs := append([]int{}, d.Errors...)
	if r.Opts.Auth != AuthNone {
		errs = append(errs, 401)
	}
	if r.Opts.Auth == AuthAdmin || r.Opts.Auth == AuthMetrics {
		errs = append(errs, 403)
	}
	if d.Body != nil {
		errs = append(errs, 413, 415, 422)
	}
	if d.Multipart != nil || d.Form != nil {
		errs = append(errs, 413)
	}
	if r.Opts.Limit != LimitNone {
		errs = append(errs, 429)
	}
	for _, code := range errs {
		if _, ok := out[strconv.Itoa(code)]; ok {
			continue
		}
		if slices.Contains(errorStatuses, code) {
			out[strconv.Itoa(code)] = map[string]any{"$ref": "#/components/responses/" + strconv.Itoa(code)}
		} else {
			out[strconv.Itoa(code)] = map[string]any{"description": statusText(code),
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
		}
	}
	out["default"] = map[string]any{"description": "Any other error",
		"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/Error"}}}}
	return out
}
