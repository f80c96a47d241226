package http

import (
	"fmt"
	"strings"
	"testing"
)

func TestRoutingOperators(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines)
	resp, body := e.do("GET", "/api/routing-rules/operators", "", nil)
	e.expect(resp, body, 200)
	m := e.json(body)
	if len(m["operators"].([]any)) != 9 || len(m["builtin_fields"].([]any)) != 5 || m["metadata_prefix"] != "metadata." {
		t.Fatalf("operators %s", body)
	}
}

func (e *testEnv) pipeline(token, name string) int64 {
	e.t.Helper()
	resp, body := e.do("POST", "/api/pipelines", token, map[string]any{"name": name})
	e.expect(resp, body, 201)
	return e.id(e.json(body))
}

func (e *testEnv) rule(token string, r map[string]any) int64 {
	e.t.Helper()
	resp, body := e.do("POST", "/api/routing-rules", token, r)
	e.expect(resp, body, 201)
	return e.id(e.json(body))
}

func TestRoutingRuleCRUDAndValidation(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines)
	pid := e.pipeline("", "Invoices")
	rule := map[string]any{"name": "pdfs", "field": "file_type", "operator": "equals", "value": "pdf", "target_pipeline_id": pid}
	r1 := e.rule("", rule)
	resp, body := e.do("GET", fmt.Sprintf("/api/routing-rules/%d", r1), "", nil)
	e.expect(resp, body, 200)
	if m := e.json(body); m["position"] != 0.0 || m["is_active"] != true || m["owner_id"] != nil {
		t.Fatalf("rule %s", body)
	}
	// Validation failures are 422.
	for name, bad := range map[string]map[string]any{
		"invalid regex":   {"name": "x", "field": "filename", "operator": "regex", "value": "inv(oice", "target_pipeline_id": pid},
		"unknown op":      {"name": "x", "field": "filename", "operator": "startswith", "value": "a", "target_pipeline_id": pid},
		"unknown field":   {"name": "x", "field": "colour", "operator": "equals", "value": "a", "target_pipeline_id": pid},
		"empty metadata":  {"name": "x", "field": "metadata.", "operator": "equals", "value": "a", "target_pipeline_id": pid},
		"non-numeric gt":  {"name": "x", "field": "size", "operator": "gt", "value": "big", "target_pipeline_id": pid},
		"missing target":  {"name": "x", "field": "size", "operator": "gt", "value": "1"},
		"value too long":  {"name": "x", "field": "filename", "operator": "regex", "value": strings.Repeat("a", 2001), "target_pipeline_id": pid},
		"missing name":    {"field": "size", "operator": "gt", "value": "1", "target_pipeline_id": pid},
		"negative pos":    {"name": "x", "field": "size", "operator": "gt", "value": "1", "target_pipeline_id": pid, "position": -1},
		"value not a str": {"name": "x", "field": "size", "operator": "gt", "value": 5, "target_pipeline_id": pid},
	} {
		resp, body := e.do("POST", "/api/routing-rules", "", bad)
		if resp.StatusCode != 422 {
			t.Fatalf("%s: status %d body %s", name, resp.StatusCode, body)
		}
	}
	// A value of 2,000 characters is the most a rule takes (counted in
	// characters, not bytes).
	long := map[string]any{"name": "long", "field": "filename", "operator": "contains", "value": strings.Repeat("ü", 2000), "target_pipeline_id": pid}
	e.rule("", long)
	// A target pipeline that does not exist is 404, on create and update.
	resp, body = e.do("POST", "/api/routing-rules", "", map[string]any{"name": "x", "field": "size", "operator": "gt", "value": "1", "target_pipeline_id": pid + 999})
	e.expect(resp, body, 404)
	if d := e.json(body)["detail"]; d != "Target pipeline not found" {
		t.Fatalf("detail %v", d)
	}
	resp, body = e.do("PUT", fmt.Sprintf("/api/routing-rules/%d", r1), "", map[string]any{"target_pipeline_id": pid + 999})
	e.expect(resp, body, 404)
	resp, body = e.do("PUT", fmt.Sprintf("/api/routing-rules/%d", r1), "", map[string]any{"value": strings.Repeat("a", 2001)})
	e.expect(resp, body, 422)
	// Updating to an invalid regex is refused too.
	resp, body = e.do("PUT", fmt.Sprintf("/api/routing-rules/%d", r1), "", map[string]any{"operator": "regex", "value": "[a-"})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", fmt.Sprintf("/api/routing-rules/%d", r1), "", map[string]any{"operator": "regex", "value": `.*\.pdf`, "is_active": false})
	e.expect(resp, body, 200)
	if m := e.json(body); m["operator"] != "regex" || m["is_active"] != false || m["field"] != "file_type" {
		t.Fatalf("updated %s", body)
	}
	resp, body = e.do("DELETE", fmt.Sprintf("/api/routing-rules/%d", r1), "", nil)
	e.expect(resp, body, 204)
	resp, body = e.do("GET", fmt.Sprintf("/api/routing-rules/%d", r1), "", nil)
	e.expect(resp, body, 404)
}

func TestRoutingRuleReorder(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, mountPipelines)
	alice, bob := e.token("alice"), e.token("bob")
	pid := e.pipeline(alice, "A")
	var ids []int64
	for i := 0; i < 3; i++ {
		ids = append(ids, e.rule(alice, map[string]any{"name": fmt.Sprint("r", i), "field": "filename", "operator": "contains",
			"value": fmt.Sprint(i), "target_pipeline_id": pid}))
	}
	bobPid := e.pipeline(bob, "B")
	bobRule := e.rule(bob, map[string]any{"name": "b", "field": "filename", "operator": "contains", "value": "b", "target_pipeline_id": bobPid})
	// A rule may not target someone else's pipeline.
	resp, body := e.do("POST", "/api/routing-rules", bob, map[string]any{"name": "b2", "field": "filename", "operator": "contains", "value": "b", "target_pipeline_id": pid})
	e.expect(resp, body, 404)

	resp, body = e.do("PUT", "/api/routing-rules/reorder", alice, map[string]any{"rule_ids": []int64{ids[2], ids[0]}})
	e.expect(resp, body, 422) // partial
	resp, body = e.do("PUT", "/api/routing-rules/reorder", alice, map[string]any{"rule_ids": []int64{ids[2], ids[0], bobRule}})
	e.expect(resp, body, 422) // foreign
	resp, body = e.do("PUT", "/api/routing-rules/reorder", alice, map[string]any{"rule_ids": []int64{ids[2], ids[0], ids[1], bobRule}})
	e.expect(resp, body, 422) // foreign extra
	resp, body = e.do("PUT", "/api/routing-rules/reorder", alice, map[string]any{"rule_ids": []int64{ids[2], ids[0], ids[1]}})
	e.expect(resp, body, 200)
	got := e.list(body)
	for i, want := range []int64{ids[2], ids[0], ids[1]} {
		if e.id(got[i]) != want || got[i]["position"] != float64(i) {
			t.Fatalf("reordered %s", body)
		}
	}
	// Bob cannot see or change Alice's rules.
	resp, body = e.do("GET", fmt.Sprintf("/api/routing-rules/%d", ids[0]), bob, nil)
	e.expect(resp, body, 404)
	resp, body = e.do("GET", "/api/routing-rules", bob, nil)
	if l := e.list(body); len(l) != 1 || e.id(l[0]) != bobRule {
		t.Fatalf("bob's list %s", body)
	}
	// Deleting closes the gap.
	resp, body = e.do("DELETE", fmt.Sprintf("/api/routing-rules/%d", ids[2]), alice, nil)
	e.expect(resp, body, 204)
	resp, body = e.do("GET", "/api/routing-rules", alice, nil)
	if l := e.list(body); len(l) != 2 || l[0]["position"] != 0.0 || l[1]["position"] != 1.0 {
		t.Fatalf("after delete %s", body)
	}
}

func TestRoutingEvaluate(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, mountPipelines)
	alice := e.token("alice")
	invoices := e.pipeline(alice, "Invoices")
	big := e.pipeline(alice, "Big")
	off := e.pipeline(alice, "Off")
	resp, body := e.do("PUT", fmt.Sprintf("/api/pipelines/%d", off), alice, map[string]any{"is_active": false})
	e.expect(resp, body, 200)

	// Rule on an inactive target: skipped even though it matches first.
	e.rule(alice, map[string]any{"name": "off", "field": "filename", "operator": "contains", "value": "INV", "target_pipeline_id": off})
	e.rule(alice, map[string]any{"name": "inv", "field": "filename", "operator": "regex", "value": `inv-\d+\.pdf`, "target_pipeline_id": invoices})
	e.rule(alice, map[string]any{"name": "big", "field": "size", "operator": "gte", "value": "1000000", "target_pipeline_id": big})
	e.rule(alice, map[string]any{"name": "vendor", "field": "metadata.vendor", "operator": "equals", "value": "ACME", "target_pipeline_id": invoices})

	eval := func(in map[string]any) map[string]any {
		t.Helper()
		resp, body := e.do("POST", "/api/routing-rules/evaluate", alice, in)
		e.expect(resp, body, 200)
		return e.json(body)
	}
	// Case-insensitive full-match regex.
	m := eval(map[string]any{"filename": "INV-123.PDF", "size": 10})
	if m["matched"] != true || m["rule"].(map[string]any)["name"] != "inv" || m["target_pipeline"].(map[string]any)["id"] != float64(invoices) {
		t.Fatalf("regex: %v", m)
	}
	// Not a full match.
	m = eval(map[string]any{"filename": "old-inv-123.pdf.bak", "size": 10})
	if m["matched"] != false || m["rule"] != nil || m["target_pipeline"] != nil {
		t.Fatalf("partial regex matched: %v", m)
	}
	// Numeric comparison, not string.
	m = eval(map[string]any{"filename": "scan.tiff", "size": 2000000})
	if m["rule"].(map[string]any)["name"] != "big" {
		t.Fatalf("gte: %v", m)
	}
	m = eval(map[string]any{"filename": "scan.tiff", "size": 999999})
	if m["matched"] != false {
		t.Fatalf("gte below: %v", m)
	}
	// Metadata field, case-insensitive.
	m = eval(map[string]any{"filename": "x", "metadata": map[string]any{"vendor": "acme"}})
	if m["rule"].(map[string]any)["name"] != "vendor" {
		t.Fatalf("metadata: %v", m)
	}
}

func TestRoutingOwnerRulesBeforeSystem(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountPipelines) // single-user: rules are system rules
	sysP := e.pipeline("", "System target")
	e.rule("", map[string]any{"name": "all", "field": "filename", "operator": "not_equals", "value": "", "target_pipeline_id": sysP})
	e.SetEnv("AUTH_ENABLED", "true")
	alice := e.token("alice")
	own := e.pipeline(alice, "Mine")
	e.rule(alice, map[string]any{"name": "mine", "field": "file_type", "operator": "equals", "value": "pdf", "target_pipeline_id": own})
	resp, body := e.do("POST", "/api/routing-rules/evaluate", alice, map[string]any{"file_type": "pdf", "filename": "a.pdf"})
	e.expect(resp, body, 200)
	if m := e.json(body); m["target_pipeline"].(map[string]any)["id"] != float64(own) {
		t.Fatalf("owner rule not first: %s", body)
	}
	resp, body = e.do("POST", "/api/routing-rules/evaluate", alice, map[string]any{"file_type": "png", "filename": "a.png"})
	if m := e.json(body); m["target_pipeline"].(map[string]any)["id"] != float64(sysP) {
		t.Fatalf("system rule not applied: %s", body)
	}
	// A missing field matches only the negative operators.
	resp, body = e.do("POST", "/api/routing-rules/evaluate", alice, map[string]any{})
	if m := e.json(body); m["target_pipeline"].(map[string]any)["id"] != float64(sysP) {
		t.Fatalf("missing field with not_equals: %s", body)
	}
	// The list shows own rules and system rules.
	resp, body = e.do("GET", "/api/routing-rules", alice, nil)
	if l := e.list(body); len(l) != 2 || l[0]["owner_id"] != "alice" || l[1]["owner_id"] != nil {
		t.Fatalf("list %s", body)
	}
}
