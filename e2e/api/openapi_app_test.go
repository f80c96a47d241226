package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"docflow/e2e/e2etest"
	dfhttp "docflow/http"
	"docflow/internal/app/apptest"
)

// The OpenAPI document is generated from the route table (http/openapi.go):
// these tests hold it to the running API as `docflow serve` builds it.

// TestEveryRouteIsDocumented: every route of the built API has a summary,
// a documented request and a documented response.
func TestEveryRouteIsDocumented(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{})
	if missing := a.HTTP.Undocumented(); len(missing) > 0 {
		t.Errorf("%d routes are not documented (add a Doc to their s.Handle, docs/api.md \"Documenting a route\"):\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
}

// TestOpenAPIDocumentIsValid: /openapi.json is an OpenAPI 3.1 document that
// a real validator accepts, naming every documented route.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{})
	status, body := get(t, a.URL+"/openapi.json")
	if status != 200 {
		t.Fatalf("GET /openapi.json: %d %s", status, body)
	}
	v := openAPIValidator(t, []byte(body))
	if ok, errs := v.ValidateDocument(); !ok {
		t.Fatalf("the document is not valid OpenAPI 3.1:\n%s", validationErrors(errs))
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
	// OpenAPI requires operation ids unique in the document; renderers
	// (the /docs page) show one of two operations that share one.
	ids := map[string]string{}
	for path, item := range doc.Paths {
		for method, op := range item {
			if other, ok := ids[op.OperationID]; ok {
				t.Errorf("%s %s and %s share the operation id %q", method, path, other, op.OperationID)
			}
			ids[op.OperationID] = method + " " + path
		}
	}
	for _, r := range a.HTTP.Routes() {
		if r.Doc == nil {
			continue
		}
		if _, ok := doc.Paths[r.Path][strings.ToLower(r.Method)]; !ok {
			t.Errorf("%s %s is documented but missing from the document", r.Method, r.Path)
		}
	}
}

// TestOpenAPIExamples sends each documented example to a running server (as
// an administrator with an API token) and validates the answer against the
// document: its status is the example's, its body the schema's.
func TestOpenAPIExamples(t *testing.T) {
	t.Parallel()
	a := apptest.New(t, apptest.Options{Env: map[string]string{
		"AUTH_ENABLED":          "true",
		"MULTI_USER_ENABLED":    "true",
		"ADMIN_USERNAME":        exampleAdmin,
		"WEBHOOK_ALLOWED_HOSTS": "hooks.example.com",
	}})
	a.LocalUser(t, exampleAdmin, true)
	a.LocalUser(t, exampleColleague, false)
	f := &fixtures{t: t, url: a.URL, token: a.Token(t, exampleAdmin)}
	status, body := f.do("GET", "/openapi.json", nil)
	if status != 200 {
		t.Fatalf("GET /openapi.json: %d %s", status, body)
	}
	v := openAPIValidator(t, body)

	n := 0
	for _, r := range a.HTTP.Routes() {
		if r.Doc == nil {
			continue
		}
		for _, ex := range r.Doc.Examples {
			n++
			t.Run(r.Method+" "+r.Path+" "+ex.Name, func(t *testing.T) {
				f.t = t
				want := ex.Status
				if want == 0 {
					want = r.Doc.Responses[0].Status
				}
				req, resp, body := f.send(r, ex)
				if resp.StatusCode != want {
					t.Fatalf("%s %s: status %d, want %d: %s", req.Method, req.URL, resp.StatusCode, want, body)
				}
				resp.Body = io.NopCloser(bytes.NewReader(body))
				if ok, errs := v.ValidateHttpResponse(req, resp); !ok {
					t.Errorf("%s %s answered %d, not as documented:\n%s\nbody: %.600s", req.Method, req.URL, resp.StatusCode,
						validationErrors(errs), body)
				}
			})
		}
	}
	if n < 40 {
		t.Errorf("only %d examples are documented", n)
	}
}

const (
	exampleAdmin     = "admin@example.com"
	exampleColleague = "colleague@example.com"
)

func openAPIValidator(t *testing.T, spec []byte) validator.Validator {
	t.Helper()
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatalf("parse the document: %v", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("build the validator: %v", errs)
	}
	return v
}

func validationErrors(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "  - %s: %s\n", e.Message, e.Reason)
		for _, s := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, "      %s at %s\n", s.Reason, s.FieldPath)
		}
	}
	return b.String()
}

// fixtures makes, through the API, the resources examples' paths name:
// a fresh one for each request, so that deleting one harms no other
// example.
type fixtures struct {
	t     *testing.T
	url   string
	token string
}

// send builds the example's request, with its path parameters replaced by
// fixtures, and returns the answer and its body.
func (f *fixtures) send(r dfhttp.RouteInfo, ex dfhttp.Example) (*nethttp.Request, *nethttp.Response, []byte) {
	got := map[string]string{}
	path := r.Path
	for _, name := range dfhttp.PathParams(r.Path) {
		v, given := ex.Params[name]
		if !given || name == "id" || strings.HasSuffix(name, "_id") {
			v = f.make(r.Path, name, got)
		}
		got[name] = v
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(v), 1)
	}
	q := url.Values{}
	pathNames := dfhttp.PathParams(r.Path)
	for k, v := range ex.Params {
		if !slices.Contains(pathNames, k) {
			q.Set(k, v)
		}
	}
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var body io.Reader
	ctype := ""
	switch {
	case ex.Body != nil:
		b, err := json.Marshal(ex.Body)
		if err != nil {
			f.t.Fatal(err)
		}
		body, ctype = bytes.NewReader(b), "application/json"
	case r.Doc.Multipart != nil:
		// An upload's example sends a small text file as its file field.
		mb := e2etest.NewMultipart(f.t, "example-"+f.unique()+".txt", "An invoice from ACME for 120 EUR, "+f.unique()+".\n")
		body, ctype = mb.Body, mb.ContentType
	}
	req, err := nethttp.NewRequest(r.Method, f.url+path, body)
	if err != nil {
		f.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	// The validator matches the path against the document's, without the
	// server's address.
	vreq, _ := nethttp.NewRequest(r.Method, path, nil)
	return vreq, resp, b
}

// do sends a JSON request as the administrator.
func (f *fixtures) do(method, path string, v any) (int, []byte) {
	f.t.Helper()
	var body io.Reader
	if v != nil {
		b, _ := json.Marshal(v)
		body = bytes.NewReader(b)
	}
	req, _ := nethttp.NewRequest(method, f.url+path, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// create sends a JSON request and returns the field of the answer.
func (f *fixtures) create(method, path string, v any, field string) string {
	f.t.Helper()
	status, b := f.do(method, path, v)
	if status >= 300 {
		f.t.Fatalf("fixture %s %s: %d %s", method, path, status, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		f.t.Fatalf("fixture %s %s: %v: %s", method, path, err, b)
	}
	switch id := out[field].(type) {
	case float64:
		return fmt.Sprint(int64(id))
	case string:
		return id
	}
	f.t.Fatalf("fixture %s %s: no %s in %s", method, path, field, b)
	return ""
}

// make returns a fresh resource for the path parameter name of pattern;
// got holds the parameters before it in the path.
func (f *fixtures) make(pattern, name string, got map[string]string) string {
	f.t.Helper()
	file := "/api/files/" + got["file_id"]
	switch {
	case name == "file_id":
		return f.upload("example.txt", "An invoice from ACME for 120 EUR.\n")
	case name == "share_id":
		return f.create("POST", file+"/shares", map[string]any{"shared_with_user_id": exampleColleague, "role": "viewer"}, "id")
	case name == "comment_id":
		return f.create("POST", file+"/comments", map[string]any{"body": "Please check the total."}, "id")
	case name == "annotation_id":
		return f.create("POST", file+"/annotations", map[string]any{"page": 1, "x": 0.1, "y": 0.8, "width": 0.4, "height": 0.03,
			"content": "total", "annotation_type": "highlight", "color": "#ffeb3b"}, "id")
	case name == "token_id":
		return f.create("POST", "/api/api-tokens/", map[string]any{"name": "example"}, "id")
	case name == "pipeline_id":
		return f.create("POST", "/api/pipelines", map[string]any{"name": "Example pipeline " + f.unique()}, "id")
	case name == "step_id":
		return f.create("POST", "/api/pipelines/"+got["pipeline_id"]+"/steps", map[string]any{"step_type": "ocr"}, "id")
	case name == "webhook_id":
		return f.create("POST", "/api/webhooks/", map[string]any{"url": "https://hooks.example.com/docflow",
			"events": []string{"document.processed"}}, "id")
	case name == "hook_id":
		return f.create("POST", "/api/automation/hooks/subscribe", map[string]any{"target_url": "https://hooks.example.com/zap",
			"events": []string{"document.processed"}}, "id")
	case name == "rule_id" && strings.HasPrefix(pattern, "/api/routing-rules"):
		pid := f.create("POST", "/api/pipelines", map[string]any{"name": "Routing target " + f.unique()}, "id")
		return f.create("POST", "/api/routing-rules", map[string]any{"name": "Invoices " + f.unique(), "field": "filename",
			"operator": "contains", "value": "invoice", "target_pipeline_id": json.Number(pid)}, "id")
	case name == "rule_id" && strings.HasPrefix(pattern, "/api/classification-rules"):
		return f.create("POST", "/api/classification-rules", map[string]any{"name": "Invoices " + f.unique(), "category": "invoice",
			"rule_type": "filename_pattern", "pattern": "(?i)invoice"}, "id")
	case name == "id" && strings.HasPrefix(pattern, "/api/integrations"):
		return f.create("POST", "/api/integrations/", map[string]any{"direction": "DESTINATION", "integration_type": "WEBDAV",
			"name": "Archive " + f.unique(), "config": map[string]any{"url": "https://dav.example.com/remote.php/dav/files/me/", "path": "Archive"},
			"credentials": map[string]any{"username": "me", "password": "secret"}}, "id")
	case name == "id" && strings.HasPrefix(pattern, "/api/saved-searches"):
		return f.create("POST", "/api/saved-searches", map[string]any{"name": "Invoices " + f.unique(),
			"filters": map[string]any{"q": "invoice"}}, "id")
	case name == "user_id":
		return exampleColleague
	}
	f.t.Fatalf("no fixture for {%s} of %s: add one to fixtures.make", name, pattern)
	return ""
}

var fixtureSeq int

func (f *fixtures) unique() string {
	fixtureSeq++
	return fmt.Sprint(fixtureSeq)
}

// upload uploads a text file and returns its file id.
func (f *fixtures) upload(name, content string) string {
	f.t.Helper()
	mb := e2etest.NewMultipart(f.t, name, content)
	req, _ := nethttp.NewRequest("POST", f.url+"/api/upload", mb.Body)
	req.Header.Set("Content-Type", mb.ContentType)
	req.Header.Set("Authorization", "Bearer "+f.token)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var up struct {
		FileID int64 `json:"file_id"`
	}
	if resp.StatusCode != 201 || json.Unmarshal(b, &up) != nil || up.FileID == 0 {
		f.t.Fatalf("upload fixture: %d %s", resp.StatusCode, b)
	}
	return fmt.Sprint(up.FileID)
}
