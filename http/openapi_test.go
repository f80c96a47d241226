package http

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
)

// The reflector follows encoding/json: these are the cases the example
// test (e2e/api) would otherwise only find on a live answer.

type reflInner struct {
	When time.Time `json:"when"`
}

type reflOuter struct {
	*reflInner
	ID       int64             `json:"id"`
	Owner    *string           `json:"owner"`
	Note     string            `json:"note,omitempty"`
	Hidden   string            `json:"-"`
	Tags     []string          `json:"tags"`
	Meta     map[string]any    `json:"meta"`
	Counts   map[string]int    `json:"counts"`
	Raw      json.RawMessage   `json:"raw"`
	Children []*reflOuter      `json:"children"`
	Labels   map[string]string `json:"labels,omitempty"`
}

type reflRequest struct {
	Name *string `json:"name" openapi:"required" doc:"The name"`
	Role *string `json:"role" enum:"viewer,editor"`
	Days *int    `json:"days" min:"1" max:"30"`
}

func TestSchemaOfResponseTypes(t *testing.T) {
	reg := newSchemaRegistry()
	ref := reg.responseSchema(reflOuter{})
	if ref["$ref"] != "#/components/schemas/ReflOuter" {
		t.Fatalf("ref = %v", ref)
	}
	o := reg.components["ReflOuter"].(map[string]any)
	props := o["properties"].(map[string]any)
	for _, name := range []string{"id", "owner", "note", "tags", "meta", "raw", "children", "when", "labels", "counts"} {
		if _, ok := props[name]; !ok {
			t.Errorf("property %s missing: %v", name, props)
		}
	}
	if _, ok := props["Hidden"]; ok {
		t.Error(`a json:"-" field is documented`)
	}
	if got := props["owner"].(map[string]any)["type"]; !slices.Equal(got.([]any), []any{"string", "null"}) {
		t.Errorf("a pointer is not nullable: %v", got)
	}
	if got := props["when"].(map[string]any)["format"]; got != "date-time" {
		t.Errorf("time.Time: %v", props["when"])
	}
	req := o["required"].([]string)
	if slices.Contains(req, "note") || slices.Contains(req, "labels") || !slices.Contains(req, "id") || !slices.Contains(req, "when") {
		t.Errorf("required = %v: omitempty fields are optional, others (embedded too) required", req)
	}
	if _, ok := reg.components["ReflInner"]; ok {
		t.Error("an embedded struct became a component instead of being flattened")
	}
}

func TestSchemaOfRequestTypes(t *testing.T) {
	reg := newSchemaRegistry()
	s := reg.requestSchema(reflRequest{})
	if !slices.Equal(s["required"].([]string), []string{"name"}) {
		t.Errorf("required = %v, want only the tagged field", s["required"])
	}
	props := s["properties"].(map[string]any)
	if props["name"].(map[string]any)["description"] != "The name" {
		t.Errorf("doc tag: %v", props["name"])
	}
	if enum := props["role"].(map[string]any)["enum"].([]any); len(enum) != 3 || enum[2] != nil {
		t.Errorf("enum of a nullable field: %v", enum)
	}
	if d := props["days"].(map[string]any); d["minimum"] != 1.0 || d["maximum"] != 30.0 {
		t.Errorf("bounds: %v", d)
	}
	if len(reg.components) != 0 {
		t.Errorf("a request type made components: %v", reg.components)
	}
}

func TestUndocumentedRoutesAreListed(t *testing.T) {
	s := &Server{router: router.New()}
	h := func(*fasthttp.RequestCtx) error { return nil }
	s.Handle("GET", "/api/a", Route{}, h, Doc{Summary: "A", Responses: []Response{OK(Detail{})}})
	s.Handle("GET", "/api/b", Route{}, h)
	s.Handle("POST", "/api/c", Route{}, h, Doc{Summary: "C", Responses: []Response{OK(Detail{})}})
	s.Handle("POST", "/api/d/", Route{}, h, Doc{Summary: "D", NoBody: true, Responses: []Response{NoContent()}})
	got := strings.Join(s.Undocumented(), "\n")
	for _, want := range []string{"GET /api/b: no documentation", "POST /api/c: no documented request body"} {
		if !strings.Contains(got, want) {
			t.Errorf("Undocumented() = %q, want %q in it", got, want)
		}
	}
	if strings.Contains(got, "/api/a") || strings.Contains(got, "/api/d") {
		t.Errorf("documented routes listed: %q", got)
	}
}

func TestOperationIDsAreUnique(t *testing.T) {
	doc := &Doc{Summary: "x"}
	var routes []route
	for _, r := range [][2]string{{"GET", "/api/files"}, {"GET", "/api/files/{file_id}"}, {"POST", "/api/files/bulk-delete"},
		{"GET", "/settings"}, {"GET", "/api/settings/"}, {"GET", "/api/api-tokens"}, {"DELETE", "/api/api-tokens/{token_id}"}} {
		routes = append(routes, route{Method: r[0], Path: r[1], Doc: doc})
	}
	ids := operationIDs(routes)
	seen := map[string]string{}
	for key, id := range ids {
		if other, ok := seen[id]; ok {
			t.Errorf("%s and %s share the operation id %s", key, other, id)
		}
		seen[id] = key
	}
	if ids["GET /api/settings/"] != "getSettings" || ids["GET /settings"] != "getSettingsPage" {
		t.Errorf("the API route keeps its name, the page's ends in Page: %v", ids)
	}
}
