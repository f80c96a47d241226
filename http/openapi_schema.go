package http

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The reflector turns the Go types handlers decode and encode into JSON
// Schema (draft 2020-12, the dialect of OpenAPI 3.1) by the rules
// encoding/json follows: json tags, omitempty, "-", embedded structs
// flattened, pointers nullable, []byte as base64. NOTE: a small reflector
// rather than a library: the ones served here neither make pointers
// nullable nor name components the OpenAPI way, and the response test
// validates real answers against these schemas, so null must be allowed
// exactly where encoding/json writes it.
//
// A response type's fields without omitempty are required (encoding/json
// always writes them); a request type's fields are required only when
// tagged `openapi:"required"` (handlers decode into pointers and say
// which are missing themselves). Other tags of a field:
//
//	openapi:"required"               required in a request
//	doc:"what the field means"       its description
//	enum:"viewer,editor"             the values it takes
//	example:"invoice.pdf"            an example value (a string)
//	min:"1" max:"3650"               a number's bounds

// schemaRegistry collects the named response types as components.
type schemaRegistry struct {
	components map[string]any
	names      map[reflect.Type]string
	taken      map[string]reflect.Type
}

func newSchemaRegistry() *schemaRegistry {
	return &schemaRegistry{components: map[string]any{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawJSONType   = reflect.TypeFor[json.RawMessage]()
	durationType  = reflect.TypeFor[time.Duration]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
)

// requestSchema is the schema of a request body of v's type: inline, with
// required fields only where tagged.
func (r *schemaRegistry) requestSchema(v any) map[string]any {
	return r.schema(reflect.TypeOf(v), true, 0)
}

// responseSchema is the schema of a response body of v's type; named
// structs become components referenced by $ref.
func (r *schemaRegistry) responseSchema(v any) map[string]any {
	return r.schema(reflect.TypeOf(v), false, 0)
}

func (r *schemaRegistry) schema(t reflect.Type, request bool, depth int) map[string]any {
	if t == nil {
		return map[string]any{}
	}
	if depth > 12 {
		return map[string]any{"description": "nested too deep to describe"}
	}
	if t.Kind() == reflect.Pointer {
		return nullable(r.schema(t.Elem(), request, depth+1))
	}
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case rawJSONType:
		return map[string]any{"description": "any JSON value"}
	case durationType:
		return map[string]any{"type": "integer", "description": "nanoseconds"}
	}
	if t.Implements(marshalerType) && t.Kind() != reflect.Struct {
		// NOTE: a custom encoding of a non-struct says nothing about its
		// shape; a struct's own MarshalJSON (docflow.Pipeline) keeps its
		// fields.
		return map[string]any{"description": "any JSON value"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": "array", "items": r.schema(t.Elem(), request, depth+1)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": r.schema(t.Elem(), request, depth+1)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if request || t.Name() == "" {
			return r.object(t, request, depth)
		}
		return map[string]any{"$ref": "#/components/schemas/" + r.component(t)}
	}
	return map[string]any{}
}

// component names t among the components (its Go name, with its package's
// name before it when another package has a type of that name) and
// describes it once.
func (r *schemaRegistry) component(t reflect.Type) string {
	if n, ok := r.names[t]; ok {
		return n
	}
	name := exportName(t.Name())
	if other, ok := r.taken[name]; ok && other != t {
		pkg := t.PkgPath()
		pkg = pkg[strings.LastIndexByte(pkg, '/')+1:]
		name = exportName(pkg) + name
	}
	r.names[t], r.taken[name] = name, t
	r.components[name] = map[string]any{} // placeholder: recursive types end here
	r.components[name] = r.object(t, false, 0)
	return name
}

func exportName(s string) string {
	if s == "" {
		return s
	}
	rs := []rune(s)
	rs[0] = unicode.ToUpper(rs[0])
	return string(rs)
}

// object describes a struct's fields as encoding/json writes them.
func (r *schemaRegistry) object(t reflect.Type, request bool, depth int) map[string]any {
	props := map[string]any{}
	var required []string
	seen := map[string]bool{}
	r.fields(t, request, depth, props, &required, seen)
	o := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

func (r *schemaRegistry) fields(t reflect.Type, request bool, depth int, props map[string]any, required *[]string, seen map[string]bool) {
	var embedded []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			embedded = append(embedded, f)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		var s map[string]any
		if strings.Contains(","+opts+",", ",string,") {
			s = map[string]any{"type": "string"}
		} else {
			s = r.schema(f.Type, request, depth+1)
		}
		s = annotate(s, f)
		props[name] = s
		if request {
			if f.Tag.Get("openapi") == "required" {
				*required = append(*required, name)
			}
		} else if !omit {
			*required = append(*required, name)
		}
	}
	// Fields of embedded structs come after the outer ones, which win.
	for _, f := range embedded {
		et := f.Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem()
		}
		if et.Kind() == reflect.Struct {
			r.fields(et, request, depth+1, props, required, seen)
		}
	}
}

// annotate adds a field's doc, enum and example tags to its schema.
func annotate(s map[string]any, f reflect.StructField) map[string]any {
	doc, enum, example := f.Tag.Get("doc"), f.Tag.Get("enum"), f.Tag.Get("example")
	lo, hi := f.Tag.Get("min"), f.Tag.Get("max")
	if doc == "" && enum == "" && example == "" && lo == "" && hi == "" {
		return s
	}
	if _, ref := s["$ref"]; ref {
		// NOTE: siblings of $ref are allowed in 3.1, but a wrapper keeps
		// renderers that still read 3.0 rules showing the description.
		s = map[string]any{"allOf": []any{s}}
	}
	if doc != "" {
		s["description"] = doc
	}
	if enum != "" {
		vals := []any{}
		for v := range strings.SplitSeq(enum, ",") {
			vals = append(vals, v)
		}
		if s["type"] != nil && isNullable(s) {
			vals = append(vals, nil)
		}
		s["enum"] = vals
	}
	if example != "" {
		s["examples"] = []any{example}
	}
	if n, err := strconv.ParseFloat(lo, 64); err == nil {
		s["minimum"] = n
	}
	if n, err := strconv.ParseFloat(hi, 64); err == nil {
		s["maximum"] = n
	}
	return s
}

// nullable lets s be null as well.
func nullable(s map[string]any) map[string]any {
	if t, ok := s["type"].(string); ok {
		out := make(map[string]any, len(s))
		for k, v := range s {
			out[k] = v
		}
		out["type"] = []any{t, "null"}
		return out
	}
	if len(s) == 0 || s["description"] == "any JSON value" {
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

func isNullable(s map[string]any) bool {
	ts, ok := s["type"].([]any)
	return ok && len(ts) == 2 && ts[1] == "null"
}
