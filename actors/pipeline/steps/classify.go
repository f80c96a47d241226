package steps

import (
	"context"
	"fmt"

	"docflow"
	"docflow/processing/classify"
)

// classifyStep is classify: the built-in rules (unless the step's config
// says use_builtin_rules false) plus the owner's and the system's enabled
// rules. The result goes to AI metadata as "classification" and fills
// document_type when extraction left it empty.
type classifyStep struct{ d Deps }

var _ docflow.Step = (*classifyStep)(nil)

func (s *classifyStep) Type() string { return docflow.StepClassify }

func (s *classifyStep) Run(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
	f := in.File
	rules, err := s.d.Rules.FindClassificationRules(ctx, f.OwnerID, true)
	if err != nil {
		return nil, fmt.Errorf("load classification rules: %w", err)
	}
	if f.AIMetadata == nil {
		f.AIMetadata = map[string]any{}
	}
	useBuiltin := boolOf(in.Config, "use_builtin_rules", true)
	c := classify.Classify(f.OCRText, f.OriginalFilename, f.AIMetadata, rules, useBuiltin)
	if c.MatchedRules == nil {
		c.MatchedRules = []string{}
	}
	m, err := toMap(c)
	if err != nil {
		return nil, err
	}
	f.AIMetadata["classification"] = m
	if dt, _ := f.AIMetadata["document_type"].(string); dt == "" && c.Category != classify.Unknown {
		f.AIMetadata["document_type"] = c.Category
	}
	return &docflow.StepResult{
		Message: fmt.Sprintf("Classified as %s (confidence %d, %d rules matched of %d user and system rules)",
			c.Category, c.Confidence, len(c.MatchedRules), len(rules)),
	}, nil
}
