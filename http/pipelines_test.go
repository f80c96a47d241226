package http

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

func mountPipelines(e *testEnv) {
	e.Server.MountPipelines(PipelinesDeps{Pipelines: postgres.NewPipelineStore(e.DB)})
	e.Server.MountRouting(RoutingDeps{Rules: postgres.NewRoutingStore(e.DB), Pipelines: postgres.NewPipelineStore(e.DB)})
}

func (e *testEnv) id(m map[string]any) int64 {
	e.t.Helper()
	v, ok := m["id"].(float64)
	if !ok {
		e.t.Fatalf("no id in %v", m)
	}
	return int64(v)
}

func (e *testEnv) list(body []byte) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		e.t.Fatalf("decode list %q: %v", body, err)
	}
	return out
}

func TestStepTypesCatalogue(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines)
	resp, body := e.do("GET", "/api/pipelines/step-types", "", nil)
	e.expect(resp, body, 200)
	m := e.json(body)
	for _, st := range docflow.StandardSteps {
		if _, ok := m[st].(map[string]any); !ok {
			t.Fatalf("catalogue lacks %s: %s", st, body)
		}
	}
	ocr := m["ocr"].(map[string]any)["config_schema"].(map[string]any)
	lang := ocr["ocr_language"].(map[string]any)
	if lang["default"] != "auto" || len(lang["options"].([]any)) != 29 || ocr["force_cloud_ocr"].(map[string]any)["default"] != false {
		t.Fatalf("ocr schema %v", ocr)
	}
	if s := m["convert_to_pdf"].(map[string]any)["config_schema"].(map[string]any); len(s) != 0 {
		t.Fatalf("convert schema %v", s)
	}
	if _, ok := m[docflow.StepTest]; ok {
		t.Fatal("test step type is in the public catalogue")
	}
}

func TestSeededStandardPipeline(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines)
	resp, body := e.do("GET", "/api/pipelines", "", nil)
	e.expect(resp, body, 200)
	ps := e.list(body)
	if len(ps) != 1 || ps[0]["name"] != docflow.StandardPipelineName || ps[0]["is_default"] != true || ps[0]["owner_id"] != nil {
		t.Fatalf("pipelines %s", body)
	}
	resp, body = e.do("GET", fmt.Sprintf("/api/pipelines/%d", e.id(ps[0])), "", nil)
	e.expect(resp, body, 200)
	steps := e.json(body)["steps"].([]any)
	if len(steps) != len(docflow.StandardSteps) {
		t.Fatalf("steps %s", body)
	}
	for i, s := range steps {
		sm := s.(map[string]any)
		if sm["step_type"] != docflow.StandardSteps[i] || int(sm["position"].(float64)) != i {
			t.Fatalf("step %d: %v", i, sm)
		}
	}
}

func TestPipelineCRUDAndSteps(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines)
	resp, body := e.do("POST", "/api/pipelines", "", map[string]any{"name": "Invoices", "description": "d"})
	e.expect(resp, body, 201)
	p := e.json(body)
	pid := e.id(p)
	if p["is_active"] != true || p["is_default"] != false || p["owner_id"] != nil {
		t.Fatalf("created %s", body)
	}
	// A pipeline without steps shows "steps": [] everywhere.
	if steps, ok := p["steps"].([]any); !ok || len(steps) != 0 {
		t.Fatalf("created without steps: %s", body)
	}
	resp, body = e.do("GET", fmt.Sprintf("/api/pipelines/%d", pid), "", nil)
	e.expect(resp, body, 200)
	if steps, ok := e.json(body)["steps"].([]any); !ok || len(steps) != 0 {
		t.Fatalf("get without steps: %s", body)
	}
	resp, body = e.do("GET", "/api/pipelines", "", nil)
	e.expect(resp, body, 200)
	for _, lp := range e.list(body) {
		if _, ok := lp["steps"].([]any); !ok {
			t.Fatalf("list item without a steps array: %v", lp)
		}
	}
	if b, _ := json.Marshal(&docflow.Pipeline{}); !strings.Contains(string(b), `"steps":[]`) {
		t.Fatalf("a pipeline record with nil steps encodes as %s", b)
	}
	// Names are unique per owner, case-insensitively.
	resp, body = e.do("POST", "/api/pipelines", "", map[string]any{"name": "invoices"})
	e.expect(resp, body, 409)
	resp, body = e.do("POST", "/api/pipelines", "", map[string]any{"description": "no name"})
	e.expect(resp, body, 422)

	base := fmt.Sprintf("/api/pipelines/%d", pid)
	var ids []int64
	for _, st := range []string{"convert_to_pdf", "ocr", "classify"} {
		resp, body = e.do("POST", base+"/steps", "", map[string]any{"step_type": st})
		e.expect(resp, body, 201)
		ids = append(ids, e.id(e.json(body)))
	}
	resp, body = e.do("POST", base+"/steps", "", map[string]any{"step_type": "teleport"})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", base+"/steps", "", map[string]any{"step_type": "ocr", "config": map[string]any{"ocr_language": "klingon"}})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", base+"/steps", "", map[string]any{"step_type": "ocr", "config": map[string]any{"force_cloud_ocr": "yes"}})
	e.expect(resp, body, 422)

	// Update a step's config and label.
	resp, body = e.do("PUT", fmt.Sprintf("%s/steps/%d", base, ids[1]), "", map[string]any{
		"label": "German OCR", "config": map[string]any{"ocr_language": "deu+eng", "force_cloud_ocr": true}})
	e.expect(resp, body, 200)
	if st := e.json(body); st["label"] != "German OCR" || st["config"].(map[string]any)["ocr_language"] != "deu+eng" || int(st["position"].(float64)) != 1 {
		t.Fatalf("updated step %s", body)
	}

	// Reorder: complete list only.
	resp, body = e.do("PUT", base+"/steps/reorder", "", []int64{ids[2], ids[0], ids[1]})
	e.expect(resp, body, 200)
	steps := e.json(body)["steps"].([]any)
	for i, want := range []int64{ids[2], ids[0], ids[1]} {
		if sm := steps[i].(map[string]any); e.id(sm) != want || int(sm["position"].(float64)) != i {
			t.Fatalf("reordered %s", body)
		}
	}
	resp, body = e.do("PUT", base+"/steps/reorder", "", []int64{ids[0], ids[1]})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", base+"/steps/reorder", "", map[string]any{"step_ids": []int64{ids[0], ids[1], ids[2] + 1000}})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", base+"/steps/reorder", "", []int64{ids[0], ids[0], ids[1]})
	e.expect(resp, body, 422)
	// A foreign step (of the standard pipeline) is refused too.
	resp, body = e.do("GET", "/api/pipelines", "", nil)
	var std map[string]any
	for _, p := range e.list(body) {
		if p["name"] == docflow.StandardPipelineName {
			std = p
		}
	}
	foreign := e.id(std["steps"].([]any)[0].(map[string]any))
	resp, body = e.do("PUT", base+"/steps/reorder", "", []int64{ids[0], ids[1], foreign})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", base+"/steps/reorder", "", map[string]any{"step_ids": []int64{ids[1], ids[2], ids[0]}})
	e.expect(resp, body, 200)

	// Delete a step: positions close up.
	resp, body = e.do("DELETE", fmt.Sprintf("%s/steps/%d", base, ids[2]), "", nil)
	e.expect(resp, body, 204)
	resp, body = e.do("GET", base, "", nil)
	steps = e.json(body)["steps"].([]any)
	if len(steps) != 2 || e.id(steps[0].(map[string]any)) != ids[1] || int(steps[1].(map[string]any)["position"].(float64)) != 1 {
		t.Fatalf("after delete %s", body)
	}
	resp, body = e.do("DELETE", fmt.Sprintf("%s/steps/%d", base, ids[2]), "", nil)
	e.expect(resp, body, 404)

	// Update fields; becoming default clears the old default of the owner.
	resp, body = e.do("PUT", base, "", map[string]any{"is_default": true, "name": "Invoices v2"})
	e.expect(resp, body, 200)
	if m := e.json(body); m["is_default"] != true || m["name"] != "Invoices v2" {
		t.Fatalf("updated %s", body)
	}
	resp, body = e.do("GET", "/api/pipelines", "", nil)
	defaults := 0
	for _, p := range e.list(body) {
		if p["is_default"] == true {
			defaults++
		}
	}
	if defaults != 1 {
		t.Fatalf("defaults %d: %s", defaults, body)
	}
	resp, body = e.do("PUT", base, "", map[string]any{"name": docflow.StandardPipelineName})
	e.expect(resp, body, 409)

	resp, body = e.do("DELETE", base, "", nil)
	e.expect(resp, body, 204)
	resp, body = e.do("GET", base, "", nil)
	e.expect(resp, body, 404)
	resp, body = e.do("GET", "/api/pipelines/abc", "", nil)
	e.expect(resp, body, 404)
}

func TestPipelineStepCap(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines)
	steps := make([]map[string]any, docflow.MaxPipelineSteps+1)
	for i := range steps {
		steps[i] = map[string]any{"step_type": "classify"}
	}
	resp, body := e.do("POST", "/api/pipelines", "", map[string]any{"name": "big", "steps": steps})
	e.expect(resp, body, 422)
	resp, body = e.do("POST", "/api/pipelines", "", map[string]any{"name": "big", "steps": steps[:docflow.MaxPipelineSteps]})
	e.expect(resp, body, 201)
	pid := e.id(e.json(body))
	resp, body = e.do("POST", fmt.Sprintf("/api/pipelines/%d/steps", pid), "", map[string]any{"step_type": "ocr"})
	e.expect(resp, body, 422)
	if !strings.Contains(string(body), "50") {
		t.Fatalf("cap detail %s", body)
	}
}

func TestPipelineOwnershipMultiUser(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, mountPipelines)
	alice, bob := e.token("alice"), e.token("bob")
	resp, body := e.do("POST", "/api/pipelines", alice, map[string]any{"name": "Mine", "is_default": true})
	e.expect(resp, body, 201)
	p := e.json(body)
	if p["owner_id"] != "alice" {
		t.Fatalf("owner %s", body)
	}
	pid := e.id(p)
	// Bob has his own namespace for names and defaults.
	resp, body = e.do("POST", "/api/pipelines", bob, map[string]any{"name": "Mine", "is_default": true})
	e.expect(resp, body, 201)
	// Bob sees his own and the system pipeline, not Alice's.
	resp, body = e.do("GET", "/api/pipelines", bob, nil)
	for _, q := range e.list(body) {
		if q["owner_id"] == "alice" {
			t.Fatalf("bob sees alice's pipeline: %s", body)
		}
	}
	resp, body = e.do("GET", fmt.Sprintf("/api/pipelines/%d", pid), bob, nil)
	e.expect(resp, body, 404)
	resp, body = e.do("DELETE", fmt.Sprintf("/api/pipelines/%d", pid), bob, nil)
	e.expect(resp, body, 404)
	// The system pipeline is visible but only admins change it.
	resp, body = e.do("GET", "/api/pipelines", alice, nil)
	var sys int64
	for _, q := range e.list(body) {
		if q["owner_id"] == nil {
			sys = e.id(q)
		}
	}
	resp, body = e.do("PUT", fmt.Sprintf("/api/pipelines/%d", sys), alice, map[string]any{"is_active": false})
	e.expect(resp, body, 403)
	resp, body = e.do("POST", "/api/pipelines/admin/system", alice, map[string]any{"name": "Sys"})
	e.expect(resp, body, 403)
	// The system default is untouched by the users' defaults.
	resp, body = e.do("GET", fmt.Sprintf("/api/pipelines/%d", sys), alice, nil)
	if e.json(body)["is_default"] != true {
		t.Fatalf("system default cleared: %s", body)
	}
}

func TestSystemPipelineByAdmin(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines) // single-user: the anonymous user is admin
	resp, body := e.do("POST", "/api/pipelines/admin/system", "", map[string]any{"name": "Scans", "is_default": true,
		"steps": []map[string]any{{"step_type": "ocr"}, {"step_type": "send_to_destinations", "enabled": false}}})
	e.expect(resp, body, 201)
	p := e.json(body)
	if p["owner_id"] != nil || p["is_default"] != true || len(p["steps"].([]any)) != 2 {
		t.Fatalf("system pipeline %s", body)
	}
	resp, body = e.do("GET", "/api/pipelines", "", nil)
	for _, q := range e.list(body) {
		if q["name"] == docflow.StandardPipelineName && q["is_default"] != false {
			t.Fatalf("old default kept: %s", body)
		}
	}
}
