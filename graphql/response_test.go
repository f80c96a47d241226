package graphql_test

import (
	"encoding/json"
	"testing"

	gqlgo "github.com/graph-gophers/graphql-go"
	gqlerrors "github.com/graph-gophers/graphql-go/errors"

	"docflow/graphql"
)

// AppendResponse writes what encoding/json writes for a response (less
// its HTML escaping, as the REST API's bodies), appended to what dst
// holds.
func TestAppendResponseIsTheResponsesJSON(t *testing.T) {
	data := json.RawMessage(`{"documents":[{"id":1,"originalFilename":"a \u003cb\u003e.pdf","documentTitle":null}]}`)
	errs := []*gqlerrors.QueryError{{Message: "Not <allowed>", Path: []any{"documents", 0}, Extensions: map[string]any{"code": "FORBIDDEN"}}}
	for _, r := range []*gqlgo.Response{
		{Data: data},
		{Errors: errs},
		{Errors: errs, Data: data},
		{Data: data, Extensions: map[string]any{"cost": 3}},
		{},
	} {
		got, err := graphql.AppendResponse([]byte("prefix"), r)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if string(got[:6]) != "prefix" || json.Unmarshal(got[6:], &a) != nil || json.Unmarshal(want, &b) != nil {
			t.Fatalf("AppendResponse wrote %q", got)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) || (len(r.Errors) > 0 && string(got[6:16]) != `{"errors":`) {
			t.Fatalf("AppendResponse wrote %s, encoding/json %s", got[6:], want)
		}
	}
}
