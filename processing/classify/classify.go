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

// Priority bounds of a classification rule.
const (
	MinPriority = 0
	MaxPriority = 1000
)

// MaxPatternLength bounds a rule pattern; RE2 cannot backtrack, but a huge
// pattern still costs memory on every evaluation.
const MaxPatternLength = 2000

// Unknown is the category when nothing matches.
const Unknown = "unknown"

// RuleTypeInfo describes a rule type for GET /api/classification-rules/rule-types.
type RuleTypeInfo struct {
	Type        string `json:"type"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

// RuleTypes lists the rule types with a label and a description.
func RuleTypes() []RuleTypeInfo {
	return []RuleTypeInfo{
		{docflow.RuleFilenamePattern, "Filename pattern", "Regular expression matched against the original filename"},
		{docflow.RuleContentKeyword, "Content keyword", "Keywords separated by | ; the rule matches when the text contains any of them"},
		{docflow.RuleMetadataMatch, "Metadata match", "field=value; matches when the extracted metadata field equals the value"},
	}
}

// Label returns the label of a category: the built-in label, else the key
// itself (custom categories).
func Label(category string) string {
	if l, ok := docflow.ClassificationCategories[category]; ok {
		return l
	}
	return category
}

// ValidateRule checks a rule before it is stored. It returns EBADREQUEST for
// an unknown rule type and EINVALID for a missing field, an invalid regex, a
// metadata pattern that is not field=value, or a priority outside 0–1000.
func ValidateRule(r *docflow.ClassificationRule) error {
	if r == nil {
		return docflow.Errorf(docflow.EINVALID, "rule is required")
	}
	switch r.RuleType {
	case docflow.RuleFilenamePattern, docflow.RuleContentKeyword, docflow.RuleMetadataMatch:
	default:
		return docflow.Errorf(docflow.EBADREQUEST, "unknown rule type %q: use filename_pattern, content_keyword or metadata_match", r.RuleType)
	}
	var fields []docflow.FieldError
	if strings.TrimSpace(r.Name) == "" {
		fields = append(fields, docflow.FieldError{Field: "name", Message: "name is required"})
	}
	if strings.TrimSpace(r.Category) == "" {
		fields = append(fields, docflow.FieldError{Field: "category", Message: "category is required"})
	}
	if r.Priority < MinPriority || r.Priority > MaxPriority {
		fields = append(fields, docflow.FieldError{Field: "priority", Message: fmt.Sprintf("priority must be between %d and %d", MinPriority, MaxPriority)})
	}
	if msg := patternProblem(r); msg != "" {
		fields = append(fields, docflow.FieldError{Field: "pattern", Message: msg})
	}
	if len(fields) == 0 {
		return nil
	}
	e := docflow.Errorf(docflow.EINVALID, "%s", fields[0].Message)
	e.Fields = fields
	return e
}

func patternProblem(r *docflow.ClassificationRule) string {
	p := r.Pattern
	if strings.TrimSpace(p) == "" {
		return "pattern is required"
	}
	if len(p) > MaxPatternLength {
		return fmt.Sprintf("pattern is longer than %d characters", MaxPatternLength)
	}
	switch r.RuleType {
	case docflow.RuleFilenamePattern:
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Sprintf("invalid regular expression: %v", err)
		}
	case docflow.RuleContentKeyword:
		if len(keywords(p, true)) == 0 {
			return "pattern must contain at least one keyword (separate keywords with |)"
		}
	case docflow.RuleMetadataMatch:
		if _, _, ok := splitMetadataPattern(p); !ok {
			return "metadata pattern must have the form field=value"
		}
	}
	return ""
}

func splitMetadataPattern(p string) (field, value string, ok bool) {
	field, value, found := strings.Cut(p, "=")
	field, value = strings.TrimSpace(field), strings.TrimSpace(value)
	if !found || field == "" || value == "" {
		return "", "", false
	}
	return field, value, true
}

func keywords(p string, caseSensitive bool) []string {
	var out []string
	for _, k := range strings.Split(p, "|") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		if !caseSensitive {
			k = strings.ToLower(k)
		}
		out = append(out, k)
	}
	return out
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
	if patternProblem(r) != "" || r.Category == "" {
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
		c.keywords = keywords(r.Pattern, r.CaseSensitive)
	case docflow.RuleMetadataMatch:
		c.field, c.value, _ = splitMetadataPattern(r.Pattern)
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
