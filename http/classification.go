package http

import (
	"context"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// ClassificationStore is what the classification rules API needs from the
// system of record (storage/postgres.ClassificationStore).
type ClassificationStore interface {
	// FindClassificationRuleByID returns ENOTFOUND for unknown ids.
	FindClassificationRuleByID(ctx context.Context, id int64) (*docflow.ClassificationRule, error)
	// FindClassificationRules returns the system rules plus ownerID's own,
	// highest priority first.
	FindClassificationRules(ctx context.Context, ownerID *string, enabledOnly bool) ([]*docflow.ClassificationRule, error)
	// CreateClassificationRule inserts r; ECONFLICT on a name the owner uses.
	CreateClassificationRule(ctx context.Context, r *docflow.ClassificationRule) error
	// UpdateClassificationRule runs fn on the rule and saves it. ENOTFOUND,
	// ECONFLICT.
	UpdateClassificationRule(ctx context.Context, id int64, fn func(*docflow.ClassificationRule) error) (*docflow.ClassificationRule, error)
	// DeleteClassificationRule returns ENOTFOUND for unknown ids.
	DeleteClassificationRule(ctx context.Context, id int64) error
}

// ClassificationDeps is what the classification rules API needs.
type ClassificationDeps struct {
	Rules ClassificationStore
}

// MountClassification registers the Classification rules section of the API.
func (s *Server) MountClassification(d ClassificationDeps) {
	if d.Rules == nil {
		panic("http: MountClassification needs Rules")
	}
	h := &classificationHandlers{d: d}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/classification-rules/categories", b, h.categories, docClassCategories)
	s.Handle("GET", "/api/classification-rules/rule-types", b, h.ruleTypes, docClassRuleTypes)
	s.Handle("GET", "/api/classification-rules", b, h.list, docListClassRules)
	s.Handle("POST", "/api/classification-rules", b, h.create, docCreateClassRule)
	s.Handle("GET", "/api/classification-rules/{rule_id}", b, h.get, docGetClassRule)
	s.Handle("PUT", "/api/classification-rules/{rule_id}", b, h.update, docUpdateClassRule)
	s.Handle("DELETE", "/api/classification-rules/{rule_id}", b, h.delete, docDeleteClassRule)
}

type classificationHandlers struct{ d ClassificationDeps }

func (h *classificationHandlers) categories(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, docflow.ClassificationCategories)
	return nil
}

func (h *classificationHandlers) ruleTypes(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, docflow.ClassificationRuleTypes())
	return nil
}

func (h *classificationHandlers) list(c *fasthttp.RequestCtx) error {
	rules, err := h.d.Rules.FindClassificationRules(RequestContext(c), ownerOf(CurrentUser(c)), false)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, rules)
	return nil
}

type classRuleReq struct {
	Name          *string `json:"name"`
	Category      *string `json:"category"`
	RuleType      *string `json:"rule_type"`
	Pattern       *string `json:"pattern"`
	Priority      *int    `json:"priority"`
	CaseSensitive *bool   `json:"case_sensitive"`
	Enabled       *bool   `json:"enabled"`
}

// apply copies the fields set in req onto r.
func (req *classRuleReq) apply(r *docflow.ClassificationRule) {
	if req.Name != nil {
		r.Name = strings.TrimSpace(*req.Name)
	}
	if req.Category != nil {
		r.Category = strings.TrimSpace(*req.Category)
	}
	if req.RuleType != nil {
		r.RuleType = strings.TrimSpace(*req.RuleType)
	}
	if req.Pattern != nil {
		r.Pattern = *req.Pattern
	}
	if req.Priority != nil {
		r.Priority = *req.Priority
	}
	if req.CaseSensitive != nil {
		r.CaseSensitive = *req.CaseSensitive
	}
	if req.Enabled != nil {
		r.Enabled = *req.Enabled
	}
}

func (h *classificationHandlers) create(c *fasthttp.RequestCtx) error {
	var req classRuleReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"name", req.Name}, {"category", req.Category}, {"rule_type", req.RuleType}, {"pattern", req.Pattern}} {
		if f.v == nil || strings.TrimSpace(*f.v) == "" {
			return invalid(f.name, "%s is required", f.name)
		}
	}
	r := &docflow.ClassificationRule{OwnerID: ownerOf(CurrentUser(c)), Enabled: true}
	req.apply(r)
	if err := docflow.CheckClassificationRule(r); err != nil {
		return err
	}
	if err := h.d.Rules.CreateClassificationRule(RequestContext(c), r); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, r)
	return nil
}

// load returns the rule of the path if the user may see it: other users'
// rules are 404, as if they did not exist.
func (h *classificationHandlers) load(c *fasthttp.RequestCtx) (*docflow.ClassificationRule, error) {
	id, err := pathID(c, "rule_id")
	if err != nil {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Classification rule not found")
	}
	r, err := h.d.Rules.FindClassificationRuleByID(RequestContext(c), id)
	if err != nil {
		return nil, err
	}
	if !canSee(CurrentUser(c), r.OwnerID) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Classification rule not found")
	}
	return r, nil
}

func (h *classificationHandlers) get(c *fasthttp.RequestCtx) error {
	r, err := h.load(c)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, r)
	return nil
}

func (h *classificationHandlers) update(c *fasthttp.RequestCtx) error {
	r, err := h.load(c)
	if err != nil {
		return err
	}
	if err := canChange(CurrentUser(c), r.OwnerID); err != nil {
		return err
	}
	var req classRuleReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	out, err := h.d.Rules.UpdateClassificationRule(RequestContext(c), r.ID, func(r *docflow.ClassificationRule) error {
		req.apply(r)
		return docflow.CheckClassificationRule(r)
	})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}

func (h *classificationHandlers) delete(c *fasthttp.RequestCtx) error {
	r, err := h.load(c)
	if err != nil {
		return err
	}
	if err := canChange(CurrentUser(c), r.OwnerID); err != nil {
		return err
	}
	if err := h.d.Rules.DeleteClassificationRule(RequestContext(c), r.ID); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}
