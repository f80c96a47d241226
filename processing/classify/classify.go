// Package classify assigns a document to a category from classification
// rules: filename patterns, content keywords and metadata matches.
//
// Semantics (decisions.md): the built-in rules plus the user's enabled rules
// are all evaluated, highest priority first; each matching rule counts once
// with a base confidence (filename 60, content 70, metadata 90). The category
// with the most matches wins, ties going to the higher summed confidence; the
// final confidence is the highest base confidence of the winner plus 10 per
// extra match, capped at 100. Without any match the result is unknown, 0.
package classify

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"docflow"
)

// Base confidences per rule type.
const (
	ConfidenceFilename = 60
	ConfidenceContent  = 70
	ConfidenceMetadata = 90
	// ExtraMatchBonus is added per matching rule beyond the first.
	ExtraMatchBonus = 10
	MaxConfidence   = 100
)

// Unknown is the category when nothing matches.
const Unknown = "unknown"

// Label returns the label of a category: the built-in label, else the key
// itself (custom categories).
func Label(category string) string {
	if l, ok := docflow.ClassificationCategories[category]; ok {
		return l
	}
	return category
}

// Classify evaluates the rules (plus the built-in rules when useBuiltin) on a
// document and returns the winning category. Disabled rules and rules that do
// not validate are ignored: a broken stored rule must not fail the step.
func Classify(text, filename string, meta map[string]any, rules []*docflow.ClassificationRule, useBuiltin bool) docflow.Classification {
	all := make([]*compiledRule, 0, len(rules)+len(builtinCompiled))
	for _, r := range rules {
		if r != nil && r.Enabled {
			if c, ok := compileRule(r); ok {
				all = append(all, c)
			}
		}
	}
	if useBuiltin {
		all = append(all, builtinCompiled...)
	}
	// Highest priority first; the order decides only the order of
	// MatchedRules, since every rule is evaluated.
	sort.SliceStable(all, func(i, j int) bool { return all[i].r.Priority > all[j].r.Priority })

	lowerText := strings.ToLower(text)
	type tally struct {
		matches  int
		sum      int
		best     int
		priority int
		rules    []string
	}
	tallies := map[string]*tally{}
	for _, c := range all {
		r := c.r
		base, ok := c.match(text, lowerText, filename, meta)
		if !ok {
			continue
		}
		t := tallies[r.Category]
		if t == nil {
			t = &tally{priority: r.Priority}
			tallies[r.Category] = t
		}
		t.matches++
		t.sum += base
		t.best = max(t.best, base)
		t.priority = max(t.priority, r.Priority)
		t.rules = append(t.rules, r.Name)
	}
	if len(tallies) == 0 {
		return docflow.Classification{Category: Unknown, Label: Label(Unknown), Confidence: 0, MatchedRules: []string{}}
	}
	var win string
	for cat, t := range tallies {
		if win == "" {
			win = cat
			continue
		}
		w := tallies[win]
		switch {
		case t.matches != w.matches:
			if t.matches > w.matches {
				win = cat
			}
		case t.sum != w.sum:
			if t.sum > w.sum {
				win = cat
			}
		case t.priority != w.priority:
			if t.priority > w.priority {
				win = cat
			}
		case cat < win: // NOTE: map order is random; the name keeps the result stable.
			win = cat
		}
	}
	t := tallies[win]
	conf := min(t.best+ExtraMatchBonus*(t.matches-1), MaxConfidence)
	return docflow.Classification{Category: win, Label: Label(win), Confidence: conf, MatchedRules: t.rules}
}

// compiledRule is a rule ready to evaluate: its regular expression
// compiled, its keywords split and cased.
type compiledRule struct {
	r            *docflow.ClassificationRule
	re           *regexp.Regexp // filename_pattern
	keywords     []string       // content_keyword
	field, value string         // metadata_match
	builtin      bool
}

// builtinCompiled holds the built-in rules compiled once: they are the
// same for every document, and compiling their patterns per document
// cost more than evaluating them. Read-only after package initialisation.
var builtinCompiled = func() []*compiledRule {
	var out []*compiledRule
	for _, r := range BuiltinRules() {
		c, ok := compileRule(r)
		if !ok {
			panic("classify: invalid built-in rule " + r.Name)
		}
		out = append(out, c)
	}
	return out
}()

// compileRule prepares one rule; ok is false for a rule that does not
// validate or has no category.
func compileRule(r *docflow.ClassificationRule) (*compiledRule, bool) {
	// The catalogue's own check, so a rule it refuses (a blank category,
	// a pattern it cannot use) never counts however it was stored.
	if docflow.CheckClassificationRule(r) != nil {
		return nil, false
	}
	c := &compiledRule{r: r, builtin: isBuiltin(r)}
	switch r.RuleType {
	case docflow.RuleFilenamePattern:
		p := r.Pattern
		if !r.CaseSensitive {
			p = "(?i)" + p
		}
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, false
		}
		c.re = re
	case docflow.RuleContentKeyword:
		c.keywords = docflow.ClassificationKeywords(r.Pattern, r.CaseSensitive)
	case docflow.RuleMetadataMatch:
		c.field, c.value, _ = docflow.SplitMetadataPattern(r.Pattern)
	default:
		return nil, false
	}
	return c, true
}

// match reports whether the rule matches, and its base confidence.
func (c *compiledRule) match(text, lowerText, filename string, meta map[string]any) (int, bool) {
	switch c.r.RuleType {
	case docflow.RuleFilenamePattern:
		if filename == "" {
			return 0, false
		}
		return ConfidenceFilename, c.re.MatchString(filename)
	case docflow.RuleContentKeyword:
		hay := lowerText
		if c.r.CaseSensitive {
			hay = text
		}
		for _, k := range c.keywords {
			if c.builtin && containsAtWordStart(hay, k) || !c.builtin && strings.Contains(hay, k) {
				return ConfidenceContent, true
			}
		}
	case docflow.RuleMetadataMatch:
		v, ok := meta[c.field]
		if !ok {
			return 0, false
		}
		return ConfidenceMetadata, metaEquals(v, c.value, c.r.CaseSensitive)
	}
	return 0, false
}

// metaEquals compares a metadata value with the rule's value; a list (tags)
// matches when any element does.
func metaEquals(v any, want string, caseSensitive bool) bool {
	eq := func(s string) bool {
		s = strings.TrimSpace(s)
		if caseSensitive {
			return s == want
		}
		return strings.EqualFold(s, want)
	}
	switch x := v.(type) {
	case nil:
		return false
	case string:
		return eq(x)
	case []string:
		for _, s := range x {
			if eq(s) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if metaEquals(e, want, caseSensitive) {
				return true
			}
		}
	default:
		return eq(fmt.Sprint(x))
	}
	return false
}
