package graphql_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	gqlgo "github.com/graph-gophers/graphql-go"

	"docflow/graphql"
)

// maxAnswer bounds the JSON of any answer over the fuzz database (five
// documents): the whole schema's introspection is well below it.
const maxAnswer = 4 << 20

// FuzzExecute: any query, operation name and variables, by an
// administrator or a user, executed over a small real database, never
// panics and gets a bounded answer (at most maxAnswer bytes of JSON, in a
// generous wall-clock limit) that is data, errors or both; a query over
// MaxQueryLength or MaxComplexity is refused without a statement run;
// and every error has a message. Seeds in testdata/fuzz/FuzzExecute.
func FuzzExecute(f *testing.F) {
	for _, s := range []struct{ q, op, vars string }{
		{`{ documents(limit: 3) { id originalFilename comments { id body replies { id } } shares { role } logs { stepName } } }`, "", `{}`},
		{`query($n: Int) { documents(limit: $n) { id } }`, "", `{"n": -1}`},
		{`query($id: Int!) { document(id: $id) { id aiMetadata } }`, "", `{"id": 99999999999}`},
		{`{ settings(limit: 5) { key value } users { userId } user(userId: "ann@example.com") { userId } }`, "", `null`},
		{`{ pipelines { id name steps { name } } pipeline(id: 1) { id } }`, "", `{}`},
		{`{ search(query: "x", perPage: 500) { total } similar(documentId: 1, limit: 100) { id } }`, "", `{}`},
		{`mutation { deleteDocument(id: 1) }`, "", `{}`},
		{`query A { documents { id } } query B { __typename }`, "B", `{"x": [1, {"y": null}]}`},
		{`{ __schema { types { name fields { name args { name } } } } }`, "", `{}`},
		{`{ documents { ...F } } fragment F on Document { id ...F }`, "", `{}`},
		{`{ documents { id`, "", `{`},
	} {
		f.Add(s.q, s.op, s.vars, true)
	}
	e := newEnv(f, 5, nil)
	f.Fuzz(func(t *testing.T, query, op, vars string, asAdmin bool) {
		var v map[string]any
		_ = json.Unmarshal([]byte(vars), &v) // not JSON: no variables
		u := ann
		if asAdmin {
			u = admin
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		before := e.counter.n.Load()
		start := time.Now()
		var resp *gqlgo.Response
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp = e.api.Execute(ctx, u, graphql.Request{Query: query, OperationName: op, Variables: v})
		}()
		// A hang is a failure with its input, not a run that never ends.
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			t.Fatalf("a %d-byte query has not been answered in 2 minutes", len(query))
		}
		took := time.Since(start)
		ran := e.counter.n.Load() - before
		b, err := json.Marshal(resp)
		if err != nil {
			t.Fatalf("answer does not marshal: %v", err)
		}
		if len(b) > maxAnswer || took > 30*time.Second {
			t.Fatalf("%d bytes in %v for a %d-byte query", len(b), took, len(query))
		}
		if len(resp.Data) == 0 && len(resp.Errors) == 0 {
			t.Fatalf("neither data nor errors: %s", b)
		}
		for _, qe := range resp.Errors {
			if qe == nil || strings.TrimSpace(qe.Message) == "" {
				t.Fatalf("an error without a message: %s", b)
			}
		}
		refused := len(query) > graphql.MaxQueryLength
		if cost, ok := graphql.Complexity(query, op, v); ok && cost > graphql.MaxComplexity {
			refused = true
		}
		if refused && (ran != 0 || len(resp.Data) != 0 || len(resp.Errors) != 1) {
			t.Fatalf("a query over the limits ran %d statements: %s", ran, b)
		}
	})
}
