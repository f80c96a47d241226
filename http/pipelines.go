package http

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/valyala/fasthttp"

	"docflow"
)

// PipelinesDeps is what the pipelines API needs.
type PipelinesDeps struct {
	Pipelines docflow.PipelineStore
	// StepTypes is the catalogue users may build pipelines from; nil =
	// docflow.StepCatalogue().
	StepTypes map[string]docflow.StepTypeInfo
}

// ownerOf is the owner id a user's records get: nil for the anonymous
// single-user identity (its pipelines and rules are the system's).
func ownerOf(u *docflow.User) *string {
	if u == nil || u.Anonymous || u.ID == "" {
		return nil
	}
	id := u.ID
	return &id
}

// canSee reports whether u may read a record owned by owner.
func canSee(u *docflow.User, owner *string) bool { return docflow.MayReadOwned(u, owner) }

// canChange reports whether u may change a record owned by owner: system
// records need an administrator.
func canChange(u *docflow.User, owner *string) error {
	if owner == nil {
		if !u.IsAdmin {
			return docflow.Errorf(docflow.EFORBIDDEN, "Admin access required to change system records")
		}
		return nil
	}
	if u.IsAdmin || (ownerOf(u) != nil && *owner == u.ID) {
		return nil
	}
	return docflow.Errorf(docflow.EFORBIDDEN, "Not the owner")
}

type pipelineReq struct {
	Name        *string          `json:"name"`
	Description *string          `json:"description"`
	IsDefault   *bool            `json:"is_default"`
	IsActive    *bool            `json:"is_active"`
	Steps       []pipelineStepIn `json:"steps"`
}

type pipelineStepIn struct {
	StepType *string        `json:"step_type"`
	Label    *string        `json:"label"`
	Enabled  *bool          `json:"enabled"`
	Config   map[string]any `json:"config"`
}

// MountPipelines registers the Pipelines section of the API.
func (s *Server) MountPipelines(d PipelinesDeps) {
	if d.Pipelines == nil {
		panic("http: MountPipelines needs Pipelines")
	}
	if d.StepTypes == nil {
		d.StepTypes = docflow.StepCatalogue()
	}
	h := &pipelineHandlers{d: d}
	b := Route{Auth: AuthUser}
	s.Handle("GET", "/api/pipelines/step-types", b, h.stepTypes, docStepTypes)
	s.Handle("GET", "/api/pipelines", b, h.list, docListPipelines)
	s.Handle("POST", "/api/pipelines", b, h.create(false), docCreatePipeline)
	s.Handle("POST", "/api/pipelines/admin/system", Route{Auth: AuthAdmin}, h.create(true), docCreateSystemPipeline)
	s.Handle("GET", "/api/pipelines/{pipeline_id}", b, h.get, docGetPipeline)
	s.Handle("PUT", "/api/pipelines/{pipeline_id}", b, h.update, docUpdatePipeline)
	s.Handle("DELETE", "/api/pipelines/{pipeline_id}", b, h.delete, docDeletePipeline)
	s.Handle("POST", "/api/pipelines/{pipeline_id}/steps", b, h.addStep, docAddStep)
	s.Handle("PUT", "/api/pipelines/{pipeline_id}/steps/reorder", b, h.reorder, docReorderSteps)
	s.Handle("PUT", "/api/pipelines/{pipeline_id}/steps/{step_id}", b, h.updateStep, docUpdateStep)
	s.Handle("DELETE", "/api/pipelines/{pipeline_id}/steps/{step_id}", b, h.deleteStep, docDeleteStep)
}

type pipelineHandlers struct{ d PipelinesDeps }

func (h *pipelineHandlers) stepTypes(c *fasthttp.RequestCtx) error {
	writeJSON(c, fasthttp.StatusOK, h.d.StepTypes)
	return nil
}

func (h *pipelineHandlers) list(c *fasthttp.RequestCtx) error {
	u := CurrentUser(c)
	var ps []*docflow.Pipeline
	var err error
	if u.IsAdmin {
		ps, err = h.d.Pipelines.FindPipelines(RequestContext(c), nil, true)
	} else {
		ps, err = h.d.Pipelines.FindPipelines(RequestContext(c), ownerOf(u), false)
	}
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, ps)
	return nil
}

// load returns the pipeline named in the path if the user may see it
// (404 otherwise, so ids of others' pipelines are not revealed).
func (h *pipelineHandlers) load(c *fasthttp.RequestCtx) (*docflow.Pipeline, error) {
	id, err := pathID(c, "pipeline_id")
	if err != nil {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
	}
	p, err := h.d.Pipelines.FindPipelineByID(RequestContext(c), id)
	if err != nil {
		return nil, err
	}
	if !canSee(CurrentUser(c), p.OwnerID) {
		return nil, docflow.Errorf(docflow.ENOTFOUND, "Pipeline not found")
	}
	return p, nil
}

// loadForChange is load plus the right to change the pipeline.
func (h *pipelineHandlers) loadForChange(c *fasthttp.RequestCtx) (*docflow.Pipeline, error) {
	p, err := h.load(c)
	if err != nil {
		return nil, err
	}
	return p, canChange(CurrentUser(c), p.OwnerID)
}

func validName(field string, v *string, required bool) (string, error) {
	if v == nil {
		if required {
			return "", invalid(field, "%s is required", field)
		}
		return "", nil
	}
	name := strings.TrimSpace(*v)
	if name == "" {
		return "", invalid(field, "%s must not be empty", field)
	}
	if len(name) > 200 {
		return "", invalid(field, "%s must be at most 200 characters", field)
	}
	return name, nil
}

func (h *pipelineHandlers) create(system bool) Handler {
	return func(c *fasthttp.RequestCtx) error {
		var req pipelineReq
		if err := decodeJSON(c, &req); err != nil {
			return err
		}
		name, err := validName("name", req.Name, true)
		if err != nil {
			return err
		}
		p := &docflow.Pipeline{Name: name, IsActive: true}
		if !system {
			p.OwnerID = ownerOf(CurrentUser(c))
		}
		if req.Description != nil {
			p.Description = *req.Description
		}
		if req.IsDefault != nil {
			p.IsDefault = *req.IsDefault
		}
		if req.IsActive != nil {
			p.IsActive = *req.IsActive
		}
		if len(req.Steps) > docflow.MaxPipelineSteps {
			return invalid("steps", "A pipeline has at most %d steps", docflow.MaxPipelineSteps)
		}
		for i, in := range req.Steps {
			st, err := h.newStep(fmt.Sprintf("steps[%d].", i), in)
			if err != nil {
				return err
			}
			p.Steps = append(p.Steps, st)
		}
		if err := h.d.Pipelines.CreatePipeline(RequestContext(c), p); err != nil {
			return err
		}
		writeJSON(c, fasthttp.StatusCreated, p)
		return nil
	}
}

func (h *pipelineHandlers) get(c *fasthttp.RequestCtx) error {
	p, err := h.load(c)
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, p)
	return nil
}

func (h *pipelineHandlers) update(c *fasthttp.RequestCtx) error {
	p, err := h.loadForChange(c)
	if err != nil {
		return err
	}
	var req pipelineReq
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	name, err := validName("name", req.Name, false)
	if err != nil {
		return err
	}
	if req.Steps != nil {
		return invalid("steps", "steps are changed through /api/pipelines/{pipeline_id}/steps")
	}
	out, err := h.d.Pipelines.UpdatePipeline(RequestContext(c), p.ID, func(p *docflow.Pipeline) error {
		if name != "" {
			p.Name = name
		}
		if req.Description != nil {
			p.Description = *req.Description
		}
		if req.IsDefault != nil {
			p.IsDefault = *req.IsDefault
		}
		if req.IsActive != nil {
			p.IsActive = *req.IsActive
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}

func (h *pipelineHandlers) delete(c *fasthttp.RequestCtx) error {
	p, err := h.loadForChange(c)
	if err != nil {
		return err
	}
	if err := h.d.Pipelines.DeletePipeline(RequestContext(c), p.ID); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// newStep validates a step of a create request.
func (h *pipelineHandlers) newStep(prefix string, in pipelineStepIn) (*docflow.PipelineStep, error) {
	if in.StepType == nil || strings.TrimSpace(*in.StepType) == "" {
		return nil, invalid(prefix+"step_type", "step_type is required")
	}
	st := &docflow.PipelineStep{StepType: strings.TrimSpace(*in.StepType), Enabled: true, Config: map[string]any{}}
	info, ok := h.d.StepTypes[st.StepType]
	if !ok {
		return nil, invalid(prefix+"step_type", "step_type must be one of %s", strings.Join(sortedKeys(h.d.StepTypes), ", "))
	}
	st.Label = info.Label
	if in.Label != nil {
		st.Label = strings.TrimSpace(*in.Label)
	}
	if in.Enabled != nil {
		st.Enabled = *in.Enabled
	}
	if in.Config != nil {
		if err := validateStepConfig(prefix+"config", info, in.Config); err != nil {
			return nil, err
		}
		st.Config = in.Config
	}
	return st, nil
}

// validateStepConfig checks config against the step type's schema.
func validateStepConfig(field string, info docflow.StepTypeInfo, cfg map[string]any) error {
	for k, v := range cfg {
		opt, ok := info.ConfigSchema[k]
		if !ok {
			if len(info.ConfigSchema) == 0 {
				return invalid(field+"."+k, "this step type takes no configuration")
			}
			return invalid(field+"."+k, "unknown config key %q (allowed: %s)", k, strings.Join(sortedKeys(info.ConfigSchema), ", "))
		}
		switch opt.Type {
		case "boolean":
			if _, ok := v.(bool); !ok {
				return invalid(field+"."+k, "%s must be a boolean", k)
			}
		case "select":
			sv, ok := v.(string)
			if !ok {
				return invalid(field+"."+k, "%s must be a string", k)
			}
			// Tesseract languages may be combined with +.
			for _, part := range strings.Split(sv, "+") {
				if !slices.Contains(opt.Options, part) || (part == "auto" && sv != "auto") {
					return invalid(field+"."+k, "%s must be one of %s (languages may be joined with +)", k, strings.Join(opt.Options, ", "))
				}
			}
		case "string":
			if _, ok := v.(string); !ok {
				return invalid(field+"."+k, "%s must be a string", k)
			}
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (h *pipelineHandlers) addStep(c *fasthttp.RequestCtx) error {
	p, err := h.loadForChange(c)
	if err != nil {
		return err
	}
	var in pipelineStepIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	st, err := h.newStep("", in)
	if err != nil {
		return err
	}
	if err := h.d.Pipelines.AddStep(RequestContext(c), p.ID, st); err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusCreated, st)
	return nil
}

func (h *pipelineHandlers) updateStep(c *fasthttp.RequestCtx) error {
	p, err := h.loadForChange(c)
	if err != nil {
		return err
	}
	stepID, err := pathID(c, "step_id")
	if err != nil {
		return docflow.Errorf(docflow.ENOTFOUND, "Step not found")
	}
	var in pipelineStepIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	out, err := h.d.Pipelines.UpdateStep(RequestContext(c), p.ID, stepID, func(st *docflow.PipelineStep) error {
		if in.StepType != nil {
			st.StepType = strings.TrimSpace(*in.StepType)
			if _, ok := h.d.StepTypes[st.StepType]; !ok {
				return invalid("step_type", "step_type must be one of %s", strings.Join(sortedKeys(h.d.StepTypes), ", "))
			}
			if in.Config == nil {
				st.Config = map[string]any{} // the old config belongs to the old type
			}
		}
		if in.Label != nil {
			st.Label = strings.TrimSpace(*in.Label)
		}
		if in.Enabled != nil {
			st.Enabled = *in.Enabled
		}
		if in.Config != nil {
			if err := validateStepConfig("config", h.d.StepTypes[st.StepType], in.Config); err != nil {
				return err
			}
			st.Config = in.Config
		}
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(c, fasthttp.StatusOK, out)
	return nil
}

func (h *pipelineHandlers) deleteStep(c *fasthttp.RequestCtx) error {
	p, err := h.loadForChange(c)
	if err != nil {
		return err
	}
	stepID, err := pathID(c, "step_id")
	if err != nil {
		return docflow.Errorf(docflow.ENOTFOUND, "Step not found")
	}
	if err := h.d.Pipelines.DeleteStep(RequestContext(c), p.ID, stepID); err != nil {
		return err
	}
	c.SetStatusCode(fasthttp.StatusNoContent)
	return nil
}

// decodeIDList accepts a bare JSON array of ids or an object holding one
// under key (e.g. {"step_ids": [...]}).
func decodeIDList(c *fasthttp.RequestCtx, key string) ([]int64, error) {
	body := c.PostBody()
	trimmed := strings.TrimSpace(string(body))
	if strings.HasPrefix(trimmed, "{") {
		var obj map[string]json.RawMessage
		if err := decodeJSON(c, &obj); err != nil {
			return nil, err
		}
		raw, ok := obj[key]
		if !ok {
			return nil, invalid(key, "%s is required", key)
		}
		var ids []int64
		if err := json.Unmarshal(raw, &ids); err != nil {
			return nil, invalid(key, "%s must be an array of integers", key)
		}
		if ids == nil {
			return nil, invalid(key, "%s must be an array of integers", key)
		}
		return ids, nil
	}
	var ids []int64
	if err := decodeJSON(c, &ids); err != nil {
		return nil, err
	}
	if ids == nil {
		return nil, invalid(key, "%s must be an array of integers", key)
	}
	return ids, nil
}

func (h *pipelineHandlers) reorder(c *fasthttp.RequestCtx) error {
	p, err := h.loadForChange(c)
	if err != nil {
		return err
	}
	ids, err := decodeIDList(c, "step_ids")
	if err != nil {
		return err
	}
	steps, err := h.d.Pipelines.ReorderSteps(RequestContext(c), p.ID, ids)
	if err != nil {
		return err
	}
	p.Steps = steps
	writeJSON(c, fasthttp.StatusOK, p)
	return nil
}
