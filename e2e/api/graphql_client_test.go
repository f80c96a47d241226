package api_test

import (
	"context"
	"fmt"
	nethttp "net/http"
	"sort"
	"strings"
	"testing"

	"github.com/Khan/genqlient/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// A GraphQL client as another program would use one: genqlient's client
// over HTTP, and the schema as the server describes it by introspection,
// rebuilt by gqlparser (the parser and validator of gqlgen and genqlient),
// against which every query is validated before it is sent.

// bearer is an HTTP client that sends an API token.
type bearer struct {
	hc    *nethttp.Client
	token string
}

func (b bearer) Do(r *nethttp.Request) (*nethttp.Response, error) {
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.hc.Do(r)
}

// gqlClient is genqlient's client for a user's token, with the schema
// the server gave by introspection.
type gqlClient struct {
	t      *testing.T
	c      graphql.Client
	schema *ast.Schema
}

func newGQLClient(t *testing.T, base, token string) *gqlClient {
	t.Helper()
	g := &gqlClient{t: t, c: graphql.NewClient(base+"/graphql", bearer{hc: &nethttp.Client{}, token: token})}
	g.schema = g.introspect()
	return g
}

// do validates query against the introspected schema, sends it, and
// decodes data into out; the GraphQL errors are returned.
func (g *gqlClient) do(query string, vars map[string]any, out any) error {
	g.t.Helper()
	if g.schema != nil {
		if _, errs := gqlparser.LoadQuery(g.schema, query); len(errs) > 0 {
			g.t.Fatalf("query %q is invalid against the introspected schema: %v", query, errs)
		}
	}
	resp := &graphql.Response{Data: out}
	return g.c.MakeRequest(context.Background(), &graphql.Request{Query: query, Variables: vars}, resp)
}

const introspectionQuery = `query Introspect { __schema {
	queryType { name } mutationType { name }
	types { kind name
		fields(includeDeprecated: true) { name args { name defaultValue type { ...T } } type { ...T } }
		inputFields { name defaultValue type { ...T } }
		enumValues(includeDeprecated: true) { name }
		interfaces { name } possibleTypes { name } } } }
fragment T on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } }`

type introType struct {
	Kind   string     `json:"kind"`
	Name   string     `json:"name"`
	OfType *introType `json:"ofType"`
}

type introValue struct {
	Name         string       `json:"name"`
	DefaultValue *string      `json:"defaultValue"`
	Type         introType    `json:"type"`
	Args         []introValue `json:"args"`
}

type introSchema struct {
	Schema struct {
		QueryType    struct{ Name string }  `json:"queryType"`
		MutationType *struct{ Name string } `json:"mutationType"`
		Types        []struct {
			Kind          string                  `json:"kind"`
			Name          string                  `json:"name"`
			Fields        []introValue            `json:"fields"`
			InputFields   []introValue            `json:"inputFields"`
			EnumValues    []struct{ Name string } `json:"enumValues"`
			Interfaces    []struct{ Name string } `json:"interfaces"`
			PossibleTypes []struct{ Name string } `json:"possibleTypes"`
		} `json:"types"`
	} `json:"__schema"`
}

func (t introType) sdl() string {
	switch t.Kind {
	case "NON_NULL":
		return t.OfType.sdl() + "!"
	case "LIST":
		return "[" + t.OfType.sdl() + "]"
	}
	return t.Name
}

func (v introValue) sdl() string {
	s := v.Name
	if len(v.Args) > 0 {
		args := make([]string, len(v.Args))
		for i, a := range v.Args {
			args[i] = a.sdl()
		}
		s += "(" + strings.Join(args, ", ") + ")"
	}
	s += ": " + v.Type.sdl()
	if v.DefaultValue != nil {
		s += " = " + *v.DefaultValue
	}
	return s
}

// introspect asks the server for its schema and rebuilds it as SDL
// parsed by gqlparser.
func (g *gqlClient) introspect() *ast.Schema {
	g.t.Helper()
	var in introSchema
	if err := g.do(introspectionQuery, nil, &in); err != nil {
		g.t.Fatalf("introspection: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "schema { query: %s", in.Schema.QueryType.Name)
	if in.Schema.MutationType != nil {
		fmt.Fprintf(&b, " mutation: %s", in.Schema.MutationType.Name)
	}
	b.WriteString(" }\n")
	builtin := map[string]bool{"String": true, "Int": true, "Float": true, "Boolean": true, "ID": true}
	sort.Slice(in.Schema.Types, func(i, j int) bool { return in.Schema.Types[i].Name < in.Schema.Types[j].Name })
	for _, t := range in.Schema.Types {
		if strings.HasPrefix(t.Name, "__") || builtin[t.Name] {
			continue
		}
		switch t.Kind {
		case "SCALAR":
			fmt.Fprintf(&b, "scalar %s\n", t.Name)
		case "ENUM":
			names := make([]string, len(t.EnumValues))
			for i, v := range t.EnumValues {
				names[i] = v.Name
			}
			fmt.Fprintf(&b, "enum %s { %s }\n", t.Name, strings.Join(names, " "))
		case "UNION":
			names := make([]string, len(t.PossibleTypes))
			for i, v := range t.PossibleTypes {
				names[i] = v.Name
			}
			fmt.Fprintf(&b, "union %s = %s\n", t.Name, strings.Join(names, " | "))
		case "OBJECT", "INTERFACE", "INPUT_OBJECT":
			kw, fields := map[string]string{"OBJECT": "type", "INTERFACE": "interface", "INPUT_OBJECT": "input"}[t.Kind], t.Fields
			if t.Kind == "INPUT_OBJECT" {
				fields = t.InputFields
			}
			fmt.Fprintf(&b, "%s %s", kw, t.Name)
			if len(t.Interfaces) > 0 {
				names := make([]string, len(t.Interfaces))
				for i, v := range t.Interfaces {
					names[i] = v.Name
				}
				fmt.Fprintf(&b, " implements %s", strings.Join(names, " & "))
			}
			b.WriteString(" {\n")
			for _, f := range fields {
				fmt.Fprintf(&b, "  %s\n", f.sdl())
			}
			b.WriteString("}\n")
		}
	}
	s, err := gqlparser.LoadSchema(&ast.Source{Name: "introspection", Input: b.String()})
	if err != nil {
		g.t.Fatalf("the introspected schema does not load: %v\n%s", err, b.String())
	}
	return s
}
