package http

import (
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// RoutingDeps is what the routing rules API needs.
type RoutingDeps struct {
	Rules     docflow.RoutingStore
	Pipelines docflow.PipelineStore
}

// MountRouting registers the Routing rules section of the API.
func (s *Server) MountRouting(d RoutingDeps) {
	if d.Rules == nil || d.Pipelines == nil {
		panic("http: MountRouting needs Rules and Pipelines")
	}
	h := &routingHandlers{d: d}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/routing-rules/operators", b, h.operators, docRoutingOperators)
	s.Handle("GET", "/api/routing-rules", b, h.list, docListRoutingRules)
	s.Handle("POST", "/api/routing-rules", b, h.create, docCreateRoutingRule)
	s.Handle("POST", "/api/routing-rules/evaluate", b, h.evaluate, docEvaluateRouting)
	s.Handle("PUT", "/api/routing-rules/reorder", b, h.reorder, docReorderRoutingRules)
	s.Handle("GET", "/api/routing-rules/{rule_id}", b, h.get, docGetRoutingRule)
	s.Handle("PUT", "/api/routing-rules/{rule_id}", b, h.update, docUpdateRoutingRule)
	s.Handle("DELETE", "/api/routing-rules/{rule_id}", b, h.delete, docDeleteRoutingRule)
}

type routingHandlers struct{ d RoutingDeps }

func (h *routingHandlers) operators(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, routingOperators{Operators: docflow.RoutingOperators,
		BuiltinFields: docflow.RoutingBuiltinFields, MetadataPrefix: docflow.RoutingMetadataPrefix})
	return nil
}

func (h *routingHandlers) list(c *fasthttp.RequestCtx) error {
	rules, err := h.d.Rules.FindRules(RequestContext(c), ownerOf(CurrentUser(c)), false)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, rules)
	return nil
}

type ruleReq struct {
	Name             *string `json:"name"`
	Field            *string `json:"field"`
	Operator         *string `json:"operator"`
	Value            *string `json:"value"`
	TargetPipelineID *int64  `json:"target_pipeline_id"`
	Position         *int    `json:"position"`
	IsActive         *bool   `json:"is_active"`
}

// apply copies the fields set in req onto r.
func (req *ruleReq) apply(r *docflow.RoutingRule) {
	if req.Name != nil {
		r.Name = strings.TrimSpace(*req.Name)
	}
	if req.Field != nil {
		r.Field = strings.TrimSpace(*req.Field)
	}
	if req.Operator != nil {
		r.Operator = strings.TrimSpace(*req.Operator)
	}
	if req.Value != nil {
		r.Value = *req.Value
	}
	if req.TargetPipelineID != nil {
		r.TargetPipelineID = *req.TargetPipelineID
	}
	if req.Position != nil {
		r.Position = *req.Position
	}
	if req.IsActive != nil {
		r.IsActive = *req.IsActive
	}
}

// checkTarget verifies the rule's target pipeline exists and the user may
// use it: 404 otherwise (someone else's pipeline is not found either).
func (h *routingHandlers) checkTarget(c *fasthttp.RequestCtx, id int64) error {
	p, err := h.d.Pipelines.FindPipelineByID(RequestContext(c), id)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND || (err == nil && !canSee(CurrentUser(c), p.OwnerID)) {
		return docflow.Errorf(docflow.ENOTFOUND, "Target pipeline not found")
	}
	return err
}

func (h *routingHandlers) create(c *fasthttp.RequestCtx) error {
	var req ruleReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"name", req.Name != nil}, {"field", req.Field != nil}, {"operator", req.Operator != nil},
		{"value", req.Value != nil}, {"target_pipeline_id", req.TargetPipelineID != nil}} {
		if !f.set {
			return invalid(f.name, "%s is required", f.name)
		}
	}
	if req.Position != nil && *req.Position < 0 {
		return invalid("position", "position must not be negative")
	}
	r := &docflow.RoutingRule{OwnerID: ownerOf(CurrentUser(c)), Position: -1, IsActive: true}
	req.apply(r)
	if err := docflow.ValidateRoutingRule(r); err != nil {
		return err
	}
	if err := h.checkTarget(c, r.TargetPipelineID); err != nil {
		return err
	}
	if err := h.d.Rules.CreateRule(RequestContext(c), r); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, r)
	return nil
}

func (h *routingHandlers) load(c *fasthttp.RequestCtx) (*docflow.RoutingRule, error) {
	id, err := pathID(c, "rule_id")
	if err != nil {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Routing rule not found")
	}
	r, err := h.d.Rules.FindRuleByID(RequestContext(c), id)
	if err != nil {
		return nil, err
	}
	if !canSee(CurrentUser(c), r.OwnerID) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Routing rule not found")
	}
	return r, nil
}

func (h *routingHandlers) get(c *fasthttp.RequestCtx) error {
	r, err := h.load(c)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, r)
	return nil
}

func (h *routingHandlers) update(c *fasthttp.RequestCtx) error {
	r, err := h.load(c)
	if err != nil {
		return err
	}
	if err := canChange(CurrentUser(c), r.OwnerID); err != nil {
		return err
	}
	var req ruleReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Position != nil && *req.Position < 0 {
		return invalid("position", "position must not be negative")
	}
	if req.TargetPipelineID != nil {
		if err := h.checkTarget(c, *req.TargetPipelineID); err != nil {
			return err
		}
	}
	out, err := h.d.Rules.UpdateRule(RequestContext(c), r.ID, func(r *docflow.RoutingRule) error {
		req.apply(r)
		return docflow.ValidateRoutingRule(r)
	})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}

func (h *routingHandlers) delete(c *fasthttp.RequestCtx) error {
	r, err := h.load(c)
	if err != nil {
		return err
	}
	if err := canChange(CurrentUser(c), r.OwnerID); err != nil {
		return err
	}
	if err := h.d.Rules.DeleteRule(RequestContext(c), r.ID); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

func (h *routingHandlers) reorder(c *fasthttp.RequestCtx) error {
	ids, err := decodeIDList(c, "rule_ids")
	if err != nil {
		return err
	}
	rules, err := h.d.Rules.ReorderRules(RequestContext(c), ownerOf(CurrentUser(c)), ids)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, rules)
	return nil
}

type evaluateReq struct {
	FileType     string         `json:"file_type"`
	Filename     string         `json:"filename"`
	Size         *float64       `json:"size"`
	DocumentType string         `json:"document_type"`
	Category     string         `json:"category"`
	Metadata     map[string]any `json:"metadata"`
}

type pipelineRef struct {
	ID       int64  `json:"id"`
	Name     string `json:"name"`
	IsActive bool   `json:"is_active"`
}

func (h *routingHandlers) evaluate(c *fasthttp.RequestCtx) error {
	var req evaluateReq
	if len(c.PostBody()) > 0 {
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
	}
	in := docflow.RoutingInput{FileType: strings.TrimPrefix(strings.ToLower(strings.TrimSpace(req.FileType)), "."),
		Filename: req.Filename, DocumentType: req.DocumentType, Category: req.Category, Metadata: req.Metadata}
	if strings.Contains(in.FileType, "/") {
		in.MimeType = in.FileType
	}
	if req.Size != nil {
		if *req.Size < 0 {
			return invalid("size", "size must not be negative")
		}
		n := int64(*req.Size)
		in.Size = &n
	}
	rule, p, err := h.d.Rules.Route(RequestContext(c), ownerOf(CurrentUser(c)), in)
	if err != nil {
		return err
	}
	out := routingEvaluation{Matched: rule != nil, Rule: rule}
	if p != nil {
		out.TargetPipeline = &pipelineRef{ID: p.ID, Name: p.Name, IsActive: p.IsActive}
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}
