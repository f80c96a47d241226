package http

import "docflow"

// The response types of pipelines, routing and classification rules, and
// the documentation of their routes (/openapi.json).

type routingOperators struct {
	Operators      []string `json:"operators"`
	BuiltinFields  []string `json:"builtin_fields"`
	MetadataPrefix string   `json:"metadata_prefix" doc:"AI metadata fields are addressed as metadata.<key>"`
}

type routingEvaluation struct {
	Matched        bool                 `json:"matched"`
	Rule           *docflow.RoutingRule `json:"rule" doc:"The first rule that matched"`
	TargetPipeline *pipelineRef         `json:"target_pipeline"`
}

type stepOrder struct {
	StepIDs []int64 `json:"step_ids" openapi:"required" doc:"Every step's id, in the new order"`
}

type ruleOrder struct {
	RuleIDs []int64 `json:"rule_ids" openapi:"required" doc:"Every rule's id, in the new order"`
}

var (
	docStepTypes = Doc{
		Summary:     "The step types a pipeline can use",
		Description: "Each type with its label, description and the options of its config.",
		Responses:   []Response{OK(map[string]docflow.StepTypeInfo{})},
		Examples:    []Example{{Name: "catalogue", Summary: "The step catalogue"}},
	}
	docListPipelines = Doc{
		Summary:   "List pipelines",
		Responses: []Response{OK([]*docflow.Pipeline{})},
		Examples:  []Example{{Name: "list", Summary: "The caller's and the system's pipelines"}},
	}
	docCreatePipeline = Doc{
		Summary:     "Create a pipeline",
		Description: "The caller's own pipeline, with its steps in order (step types: GET /api/pipelines/step-types).",
		Body:        pipelineReq{},
		Responses:   []Response{Created(docflow.Pipeline{})},
		Errors:      []int{409},
		Examples: []Example{{Name: "ocr-only", Summary: "Convert and OCR, nothing else",
			Body: map[string]any{"name": "OCR only", "description": "Scans to searchable PDFs",
				"steps": []any{map[string]any{"step_type": "convert_to_pdf"}, map[string]any{"step_type": "ocr", "config": map[string]any{"ocr_language": "deu+eng"}}}}}},
	}
	docCreateSystemPipeline = Doc{
		Summary:   "Create a system pipeline (for everyone)",
		Body:      pipelineReq{},
		Responses: []Response{Created(docflow.Pipeline{})},
		Errors:    []int{409},
		Examples:  []Example{{Name: "system", Summary: "A pipeline every user may pick", Body: map[string]any{"name": "Archive scans"}}},
	}
	docGetPipeline = Doc{
		Summary:   "A pipeline with its steps",
		Responses: []Response{OK(docflow.Pipeline{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "get", Summary: "One pipeline", Params: map[string]string{"pipeline_id": "3"}}},
	}
	docUpdatePipeline = Doc{
		Summary:     "Change a pipeline",
		Description: "Fields left out are unchanged. System pipelines need an administrator.",
		Body:        pipelineReq{},
		Responses:   []Response{OK(docflow.Pipeline{})},
		Errors:      []int{403, 404, 409},
		Examples: []Example{{Name: "deactivate", Summary: "Switch a pipeline off", Params: map[string]string{"pipeline_id": "3"},
			Body: map[string]any{"is_active": false}}},
	}
	docDeletePipeline = Doc{
		Summary:   "Delete a pipeline",
		Responses: []Response{NoContent()},
		Errors:    []int{403, 404, 409},
		Examples:  []Example{{Name: "delete", Summary: "Delete a pipeline", Params: map[string]string{"pipeline_id": "3"}}},
	}
	docAddStep = Doc{
		Summary:   "Add a step at the end of a pipeline",
		Body:      pipelineStepIn{},
		Responses: []Response{Created(docflow.PipelineStep{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "classify", Summary: "Add classification", Params: map[string]string{"pipeline_id": "3"},
			Body: map[string]any{"step_type": "classify", "label": "Sort by type"}}},
	}
	docReorderSteps = Doc{
		Summary:     "Put a pipeline's steps in a new order",
		Description: "The body names every step once: {\"step_ids\": [...]} or the bare array. Positions are reassigned from 0.",
		Body:        stepOrder{},
		Responses:   []Response{OK(docflow.Pipeline{})},
		Errors:      []int{403, 404},
	}
	docUpdateStep = Doc{
		Summary:   "Change a step",
		Body:      pipelineStepIn{},
		Responses: []Response{OK(docflow.PipelineStep{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "disable", Summary: "Skip a step for now", Params: map[string]string{"pipeline_id": "3", "step_id": "9"},
			Body: map[string]any{"enabled": false}}},
	}
	docDeleteStep = Doc{
		Summary:   "Remove a step",
		Responses: []Response{NoContent()},
		Errors:    []int{403, 404},
		Examples:  []Example{{Name: "delete", Summary: "Remove a step", Params: map[string]string{"pipeline_id": "3", "step_id": "9"}}},
	}

	docRoutingOperators = Doc{
		Summary:   "What routing rules can compare",
		Responses: []Response{OK(routingOperators{})},
		Examples:  []Example{{Name: "operators", Summary: "Operators and fields"}},
	}
	docListRoutingRules = Doc{
		Summary:     "List routing rules",
		Description: "The caller's and the system's rules by position: the first that matches a document picks its pipeline.",
		Responses:   []Response{OK([]*docflow.RoutingRule{})},
		Examples:    []Example{{Name: "list", Summary: "Rules in order"}},
	}
	docCreateRoutingRule = Doc{
		Summary:   "Create a routing rule",
		Body:      ruleReq{},
		Responses: []Response{Created(docflow.RoutingRule{})},
		Errors:    []int{404, 409},
	}
	docEvaluateRouting = Doc{
		Summary:     "Which pipeline a document would get (dry run)",
		Body:        evaluateReq{},
		Responses:   []Response{OK(routingEvaluation{})},
		Examples:    []Example{{Name: "invoice", Summary: "A PDF named like an invoice", Body: map[string]any{"file_type": "pdf", "filename": "invoice-2026-11.pdf", "size": 48213}}},
		Description: "Nothing is changed; the body describes a document (all fields optional).",
	}
	docReorderRoutingRules = Doc{
		Summary:     "Put routing rules in a new order",
		Description: "The body names every rule of the caller once: {\"rule_ids\": [...]} or the bare array.",
		Body:        ruleOrder{},
		Responses:   []Response{OK([]*docflow.RoutingRule{})},
		Errors:      []int{403},
	}
	docGetRoutingRule = Doc{
		Summary:   "A routing rule",
		Responses: []Response{OK(docflow.RoutingRule{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "get", Summary: "One rule", Params: map[string]string{"rule_id": "2"}}},
	}
	docUpdateRoutingRule = Doc{
		Summary:   "Change a routing rule",
		Body:      ruleReq{},
		Responses: []Response{OK(docflow.RoutingRule{})},
		Errors:    []int{403, 404},
		Examples: []Example{{Name: "value", Summary: "Match another word", Params: map[string]string{"rule_id": "2"},
			Body: map[string]any{"value": "rechnung"}}},
	}
	docDeleteRoutingRule = Doc{
		Summary:   "Delete a routing rule",
		Responses: []Response{NoContent()},
		Errors:    []int{403, 404},
		Examples:  []Example{{Name: "delete", Summary: "Delete a rule", Params: map[string]string{"rule_id": "2"}}},
	}

	docClassCategories = Doc{
		Summary:   "The built-in categories, key to label",
		Responses: []Response{OK(map[string]string{})},
		Examples:  []Example{{Name: "categories", Summary: "invoice: Invoice…"}},
	}
	docClassRuleTypes = Doc{
		Summary:   "The kinds of classification rule",
		Responses: []Response{OK([]docflow.ClassificationRuleType{})},
		Examples:  []Example{{Name: "types", Summary: "filename_pattern, content_keyword, metadata_match"}},
	}
	docListClassRules = Doc{
		Summary:   "List classification rules",
		Responses: []Response{OK([]*docflow.ClassificationRule{})},
		Examples:  []Example{{Name: "list", Summary: "The system's and the caller's rules"}},
	}
	docCreateClassRule = Doc{
		Summary: "Create a classification rule",
		Description: "pattern is a regular expression (filename_pattern), keywords joined with | (content_keyword) or field=value " +
			"(metadata_match); higher priority is evaluated first. Names are unique per user.",
		Body:      classRuleReq{},
		Responses: []Response{Created(docflow.ClassificationRule{})},
		Errors:    []int{409},
		Examples: []Example{{Name: "payslips", Summary: "Payslips by their words",
			Body: map[string]any{"name": "Payslips", "category": "payslip", "rule_type": "content_keyword", "pattern": "payslip|gross pay|net pay", "priority": 10}}},
	}
	docGetClassRule = Doc{
		Summary:   "A classification rule",
		Responses: []Response{OK(docflow.ClassificationRule{})},
		Errors:    []int{404},
		Examples:  []Example{{Name: "get", Summary: "One rule", Params: map[string]string{"rule_id": "2"}}},
	}
	docUpdateClassRule = Doc{
		Summary:   "Change a classification rule",
		Body:      classRuleReq{},
		Responses: []Response{OK(docflow.ClassificationRule{})},
		Errors:    []int{403, 404, 409},
		Examples: []Example{{Name: "disable", Summary: "Switch a rule off", Params: map[string]string{"rule_id": "2"},
			Body: map[string]any{"enabled": false}}},
	}
	docDeleteClassRule = Doc{
		Summary:   "Delete a classification rule",
		Responses: []Response{NoContent()},
		Errors:    []int{403, 404},
		Examples:  []Example{{Name: "delete", Summary: "Delete a rule", Params: map[string]string{"rule_id": "2"}}},
	}
)
