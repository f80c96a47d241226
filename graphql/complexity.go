package graphql

import (
	"strconv"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// The cost of a query, checked before it runs: every field costs 1, and
// what a list field selects costs once per item it may return: its limit
// (or perPage) argument, capped as the resolver caps it, or the field's
// default. A list without an argument counts a nominal number of items
// (a document's comments, shares and logs, a pipeline's steps).
//
// NOTE: the depth limit (MaxDepth, checked by the library's validation)
// bounds recursion; this bounds breadth, which depth alone does not: 200
// documents each with their comments and logs is shallow and large.

// listCost is how a list field multiplies the cost of its selection.
type listCost struct {
	arg      string // the argument giving the count, "" for none
	dflt     int    // the count without the argument
	max      int    // the cap the resolver applies
	nominal  bool   // no argument: dflt items are assumed
	rootOnly bool   // only as a field of Query
}

var listCosts = map[string]listCost{
	"documents": {arg: "limit", dflt: 25, max: MaxDocuments, rootOnly: true},
	"pipelines": {arg: "limit", dflt: 100, max: 1000, rootOnly: true},
	"settings":  {arg: "limit", dflt: 100, max: 1000, rootOnly: true},
	"users":     {arg: "limit", dflt: 25, max: MaxUsers, rootOnly: true},
	"search":    {arg: "perPage", dflt: 20, max: 100, rootOnly: true},
	"similar":   {arg: "limit", dflt: 5, max: 20, rootOnly: true},
	"comments":  {dflt: 10, nominal: true},
	"replies":   {dflt: 2, nominal: true},
	"shares":    {dflt: 5, nominal: true},
	"logs":      {dflt: 20, nominal: true},
	"steps":     {dflt: 10, nominal: true},
}

// Complexity returns the cost of the operation named op (or the only
// one) of query with vars; ok is false when the query does not parse or
// names no such operation, which execution then reports.
func Complexity(query, op string, vars map[string]any) (cost int, ok bool) {
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return 0, false
	}
	var operation *ast.OperationDefinition
	for _, o := range doc.Operations {
		if o.Name == op || (op == "" && len(doc.Operations) == 1) {
			operation = o
		}
	}
	if operation == nil {
		return 0, false
	}
	w := costWalker{frags: doc.Fragments, vars: vars, visiting: map[string]bool{}, costs: map[fragmentUse]int{}}
	return w.selections(operation.SelectionSet, true), true
}

type costWalker struct {
	frags    ast.FragmentDefinitionList
	vars     map[string]any
	visiting map[string]bool // fragments being expanded (a cycle is a validation error)
	// costs are the fragments' costs already counted: a fragment costs
	// the same wherever it is spread, and counting it once per spread
	// would take time exponential in the number of fragments (each
	// spreading the next twice: 40 fragments, 2^40 fields).
	costs map[fragmentUse]int
}

// fragmentUse is a fragment spread at the operation's root or below it.
type fragmentUse struct {
	name string
	root bool
}

// selections returns the cost of set; root reports whether it is the
// operation's own selection.
func (w *costWalker) selections(set ast.SelectionSet, root bool) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total = saturate(total, w.field(s, root))
		case *ast.InlineFragment:
			total = saturate(total, w.selections(s.SelectionSet, root))
		case *ast.FragmentSpread:
			f := w.frags.ForName(s.Name)
			if f == nil || w.visiting[s.Name] {
				continue
			}
			use := fragmentUse{s.Name, root}
			c, ok := w.costs[use]
			if !ok {
				w.visiting[s.Name] = true
				c = w.selections(f.SelectionSet, root)
				w.visiting[s.Name] = false
				w.costs[use] = c
			}
			total = saturate(total, c)
		}
	}
	return total
}

func (w *costWalker) field(f *ast.Field, root bool) int {
	inner := w.selections(f.SelectionSet, false)
	lc, isList := listCosts[f.Name]
	if !isList || (lc.rootOnly && !root) {
		return saturate(1, inner)
	}
	n := lc.dflt
	if !lc.nominal {
		if v, ok := w.intArg(f, lc.arg); ok {
			n = v
		}
		n = min(max(n, 0), lc.max)
	}
	return saturate(1, mulSaturate(max(n, 1), inner))
}

// intArg reads an integer argument, literal or from a variable.
func (w *costWalker) intArg(f *ast.Field, name string) (int, bool) {
	a := f.Arguments.ForName(name)
	if a == nil || a.Value == nil {
		return 0, false
	}
	switch a.Value.Kind {
	case ast.IntValue:
		n, err := strconv.Atoi(a.Value.Raw)
		return n, err == nil
	case ast.Variable:
		switch v := w.vars[a.Value.Raw].(type) {
		case float64:
			return int(v), true
		case int:
			return v, true
		case int64:
			return int(v), true
		}
	}
	return 0, false
}

const costCeiling = 1 << 40

func saturate(a, b int) int { return min(a+b, costCeiling) }

func mulSaturate(a, b int) int {
	if a != 0 && b > costCeiling/a {
		return costCeiling
	}
	return min(a*b, costCeiling)
}
