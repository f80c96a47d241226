package docflow

// The rules every classification rule obeys, wherever it is written
// (the API) or read (the classify step): its types, and the check of a
// rule before it is stored.

import (
	"fmt"
	"regexp"
	"strings"
)

// Priority bounds of a classification rule.
const (
	ClassificationMinPriority = 0
	ClassificationMaxPriority = 1000
)

// MaxClassificationPattern bounds a rule pattern; RE2 cannot backtrack, but a huge
// pattern still costs memory on every evaluation.
const MaxClassificationPattern = 2000

// ClassificationRuleType describes a rule type for GET /api/classification-rules/rule-types.
type ClassificationRuleType struct {
	Type        string `json:"type"`
	Label       string `json:"label"`
	Description string `json:"description"`
}

// ClassificationRuleTypes lists the rule types with a label and a description.
func ClassificationRuleTypes() []ClassificationRuleType {
	return []ClassificationRuleType{
		{RuleFilenamePattern, "Filename pattern", "Regular expression matched against the original filename"},
		{RuleContentKeyword, "Content keyword", "Keywords separated by | ; the rule matches when the text contains any of them"},
		{RuleMetadataMatch, "Metadata match", "field=value; matches when the extracted metadata field equals the value"},
	}
}

// CheckClassificationRule checks a rule before it is stored. It returns EBADREQUEST for
// an unknown rule type and EINVALID for a missing field, an invalid regex, a
// metadata pattern that is not field=value, or a priority outside 0–1000.
func CheckClassificationRule(r *ClassificationRule) error {
	if r == nil {
		return Errorf(EINVALID, "rule is required")
	}
	switch r.RuleType {
	case RuleFilenamePattern, RuleContentKeyword, RuleMetadataMatch:
	default:
		return Errorf(EBADREQUEST, "unknown rule type %q: use filename_pattern, content_keyword or metadata_match", r.RuleType)
	}
	var fields []FieldError
	if strings.TrimSpace(r.Name) == "" {
		fields = append(fields, FieldError{Field: "name", Message: "name is required"})
	}
	if strings.TrimSpace(r.Category) == "" {
		fields = append(fields, FieldError{Field: "category", Message: "category is required"})
	}
	if r.Priority < ClassificationMinPriority || r.Priority > ClassificationMaxPriority {
		fields = append(fields, FieldError{Field: "priority", Message: fmt.Sprintf("priority must be between %d and %d", ClassificationMinPriority, ClassificationMaxPriority)})
	}
	if msg := ClassificationPatternProblem(r); msg != "" {
		fields = append(fields, FieldError{Field: "pattern", Message: msg})
	}
	if len(fields) == 0 {
		return nil
	}
	e := Errorf(EINVALID, "%s", fields[0].Message)
	e.Fields = fields
	return e
}

// ClassificationPatternProblem says what is wrong with r's pattern for its
// type ("" when nothing is): missing, too long, an invalid regular
// expression, no keyword, or a metadata pattern that is not field=value.
func ClassificationPatternProblem(r *ClassificationRule) string {
	p := r.Pattern
	if strings.TrimSpace(p) == "" {
		return "pattern is required"
	}
	if len(p) > MaxClassificationPattern {
		return fmt.Sprintf("pattern is longer than %d characters", MaxClassificationPattern)
	}
	switch r.RuleType {
	case RuleFilenamePattern:
		if _, err := regexp.Compile(p); err != nil {
			return fmt.Sprintf("invalid regular expression: %v", err)
		}
	case RuleContentKeyword:
		if len(ClassificationKeywords(p, true)) == 0 {
			return "pattern must contain at least one keyword (separate keywords with |)"
		}
	case RuleMetadataMatch:
		if _, _, ok := SplitMetadataPattern(p); !ok {
			return "metadata pattern must have the form field=value"
		}
	}
	return ""
}

// SplitMetadataPattern splits a metadata_match pattern, field=value; ok
// is false unless both sides are non-empty.
func SplitMetadataPattern(p string) (field, value string, ok bool) {
	field, value, found := strings.Cut(p, "=")
	field, value = strings.TrimSpace(field), strings.TrimSpace(value)
	if !found || field == "" || value == "" {
		return "", "", false
	}
	return field, value, true
}

// ClassificationKeywords splits a content_keyword pattern at |, trimmed,
// lower-cased unless caseSensitive, empty keywords dropped.
func ClassificationKeywords(p string, caseSensitive bool) []string {
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
