package graphql

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// fragmentFan is a query whose fragments each spread the next one twice:
// n fragments, 2^n fields once expanded, a few hundred bytes written.
func fragmentFan(n int) string {
	var b strings.Builder
	b.WriteString("{ documents { ...F0 } }\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "fragment F%d on Document { id ...F%d ...F%d }\n", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on Document { id }\n", n)
	return b.String()
}

// A query's cost is counted in time linear in its text: 40 fragments
// each spreading the next twice cost 2^41 fields (capped), counted at
// once, not by expanding every spread (found while writing
// FuzzComplexity: 24 such fragments took two minutes).
func TestComplexityOfAFragmentFan(t *testing.T) {
	start := time.Now()
	cost, ok := Complexity(fragmentFan(40), "", nil)
	if !ok || cost <= MaxComplexity {
		t.Fatalf("cost %d, %v: want over %d", cost, ok, MaxComplexity)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("counted in %v", d)
	}
	if cost, _ := Complexity(fragmentFan(3), "", nil); cost != 1+25*(1+2*(1+2*(1+2*1))) {
		t.Fatalf("3 fragments: cost %d", cost)
	}
}

// FuzzComplexity: Complexity never panics and ends in time linear in the
// query's text (bounded here by a generous wall-clock limit); its cost
// is within [0, costCeiling], at least one per field of the operation's
// own selection; and it reports ok exactly when the query parses and
// names the operation asked for. Seeds in testdata/fuzz/FuzzComplexity.
func FuzzComplexity(f *testing.F) {
	for _, s := range []struct{ q, op string }{
		{"{ documents(limit: 200) { id comments { id replies { id } } } }", ""},
		{"query A { pipelines { steps { name } } } query B { users(limit: $n) { userId } }", "B"},
		{fragmentFan(12), ""},
		{"fragment F on Document { ...F } { documents { ...F } }", ""},
		{"{ search(perPage: -5) { total } similar(limit: 99999999999999999999) { id } }", ""},
		{"{ documents { ... on Document { id ... { logs { id } } } } }", ""},
		{"{ " + strings.Repeat("__typename ", 5000) + "}", ""},
	} {
		f.Add(s.q, s.op, int64(7))
	}
	f.Fuzz(func(t *testing.T, query, op string, n int64) {
		if len(query) > MaxQueryLength {
			return // Execute refuses it before counting
		}
		start := time.Now()
		cost, ok := Complexity(query, op, map[string]any{"n": float64(n), "m": n})
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("%d bytes counted in %v", len(query), d)
		}
		if cost < 0 || cost > costCeiling {
			t.Fatalf("cost %d", cost)
		}
		doc, err := parser.ParseQuery(&ast.Source{Input: query})
		var found *ast.OperationDefinition
		if err == nil {
			for _, o := range doc.Operations {
				if o.Name == op || (op == "" && len(doc.Operations) == 1) {
					found = o
				}
			}
		}
		if ok != (found != nil) {
			t.Fatalf("ok %v, operation %v (parse error %v)", ok, found, err)
		}
		if ok && cost < len(found.SelectionSet)-countFragments(found.SelectionSet) {
			t.Fatalf("cost %d for %d fields", cost, len(found.SelectionSet))
		}
	})
}

// countFragments counts the fragments (spread or inline) of a selection.
func countFragments(set ast.SelectionSet) int {
	n := 0
	for _, s := range set {
		if _, ok := s.(*ast.Field); !ok {
			n++
		}
	}
	return n
}
