package http

import (
	"fmt"
	"strings"
	"testing"

	"docflow/storage/postgres"
)

func mountClassification(e *testEnv) {
	e.Server.MountClassification(ClassificationDeps{Rules: postgres.NewClassificationStore(e.DB)})
}

func (e *testEnv) classRule(token string, r map[string]any) int64 {
	e.t.Helper()
	resp, body := e.do("POST", "/api/classification-rules/", token, r)
	e.expect(resp, body, 201)
	id, ok := e.json(body)["id"].(float64)
	if !ok || id <= 0 {
		e.t.Fatalf("no id in %s", body)
	}
	return int64(id)
}

func TestClassificationCatalogues(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountClassification)
	resp, body := e.do("GET", "/api/classification-rules/categories", "", nil)
	e.expect(resp, body, 200)
	cats := e.json(body)
	if len(cats) != 10 || cats["insurance"] != "Insurance Document" || cats["bank_statement"] != "Bank Statement" || cats["unknown"] != "Unknown" {
		t.Fatalf("categories %s", body)
	}
	resp, body = e.do("GET", "/api/classification-rules/rule-types", "", nil)
	e.expect(resp, body, 200)
	for _, want := range []string{`"type":"filename_pattern"`, `"type":"content_keyword"`, `"type":"metadata_match"`, `"label":`, `"description":`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("rule types lack %s: %s", want, body)
		}
	}
}

func TestClassificationRuleCRUDAndValidation(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, nil, mountClassification)
	id := e.classRule("", map[string]any{"name": "Invoices by name", "category": "invoice",
		"rule_type": "filename_pattern", "pattern": `^inv-\d+`})
	resp, body := e.do("GET", fmt.Sprintf("/api/classification-rules/%d", id), "", nil)
	e.expect(resp, body, 200)
	m := e.json(body)
	if m["priority"] != 0.0 || m["case_sensitive"] != false || m["enabled"] != true || m["owner_id"] != nil ||
		m["category"] != "invoice" || m["rule_type"] != "filename_pattern" {
		t.Fatalf("defaults %s", body)
	}

	for name, tc := range map[string]struct {
		body   map[string]any
		status int
	}{
		"unknown rule type":  {map[string]any{"name": "a", "category": "x", "rule_type": "colour", "pattern": "red"}, 400},
		"duplicate name":     {map[string]any{"name": "Invoices by name", "category": "x", "rule_type": "content_keyword", "pattern": "a"}, 409},
		"priority too high":  {map[string]any{"name": "b", "category": "x", "rule_type": "content_keyword", "pattern": "a", "priority": 1001}, 422},
		"priority negative":  {map[string]any{"name": "b", "category": "x", "rule_type": "content_keyword", "pattern": "a", "priority": -1}, 422},
		"invalid regex":      {map[string]any{"name": "b", "category": "x", "rule_type": "filename_pattern", "pattern": "inv(oice"}, 422},
		"metadata not k=v":   {map[string]any{"name": "b", "category": "x", "rule_type": "metadata_match", "pattern": "sender"}, 422},
		"missing name":       {map[string]any{"category": "x", "rule_type": "content_keyword", "pattern": "a"}, 422},
		"missing pattern":    {map[string]any{"name": "b", "category": "x", "rule_type": "content_keyword"}, 422},
		"missing category":   {map[string]any{"name": "b", "rule_type": "content_keyword", "pattern": "a"}, 422},
		"priority not a int": {map[string]any{"name": "b", "category": "x", "rule_type": "content_keyword", "pattern": "a", "priority": "high"}, 422},
	} {
		resp, body := e.do("POST", "/api/classification-rules", "", tc.body)
		if resp.StatusCode != tc.status {
			t.Fatalf("%s: status %d, want %d; body %s", name, resp.StatusCode, tc.status, body)
		}
		if !strings.Contains(string(body), `"detail"`) {
			t.Fatalf("%s: no detail in %s", name, body)
		}
	}
	// Boundaries are accepted; a custom category is fine.
	e.classRule("", map[string]any{"name": "top", "category": "medical", "rule_type": "content_keyword", "pattern": "diagnosis|patient", "priority": 1000})
	e.classRule("", map[string]any{"name": "meta", "category": "invoice", "rule_type": "metadata_match", "pattern": "document_type=invoice", "priority": 0})

	// Partial update keeps the other fields.
	path := fmt.Sprintf("/api/classification-rules/%d", id)
	resp, body = e.do("PUT", path, "", map[string]any{"priority": 50, "enabled": false})
	e.expect(resp, body, 200)
	if m := e.json(body); m["priority"] != 50.0 || m["enabled"] != false || m["pattern"] != `^inv-\d+` || m["name"] != "Invoices by name" {
		t.Fatalf("partial update %s", body)
	}
	resp, body = e.do("PUT", path, "", map[string]any{"pattern": "[a-"})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", path, "", map[string]any{"priority": 5000})
	e.expect(resp, body, 422)
	resp, body = e.do("PUT", path, "", map[string]any{"rule_type": "nonsense"})
	e.expect(resp, body, 400)
	resp, body = e.do("PUT", path, "", map[string]any{"name": "top"})
	e.expect(resp, body, 409)

	// The list holds all three, highest priority first.
	resp, body = e.do("GET", "/api/classification-rules/", "", nil)
	e.expect(resp, body, 200)
	if !strings.HasPrefix(string(body), `[{"id":`) || strings.Count(string(body), `"id":`) != 3 ||
		strings.Index(string(body), `"name":"top"`) > strings.Index(string(body), `"name":"Invoices by name"`) {
		t.Fatalf("list %s", body)
	}

	resp, body = e.do("DELETE", path, "", nil)
	e.expect(resp, body, 204)
	resp, body = e.do("GET", path, "", nil)
	e.expect(resp, body, 404)
	resp, body = e.do("DELETE", path, "", nil)
	e.expect(resp, body, 404)
	resp, body = e.do("GET", "/api/classification-rules/abc", "", nil)
	e.expect(resp, body, 404)
}

func TestClassificationRuleOwnerScoping(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t, map[string]string{"AUTH_ENABLED": "true"}, mountClassification)
	alice, bob := e.token("alice"), e.token("bob")
	resp, body := e.do("GET", "/api/classification-rules", "", nil)
	e.expect(resp, body, 401)

	mine := e.classRule(alice, map[string]any{"name": "mine", "category": "invoice", "rule_type": "content_keyword", "pattern": "invoice"})
	// Bob may use the same name; he does not see Alice's rule.
	bobs := e.classRule(bob, map[string]any{"name": "mine", "category": "receipt", "rule_type": "content_keyword", "pattern": "receipt"})
	path := fmt.Sprintf("/api/classification-rules/%d", mine)
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		resp, body := e.do(m, path, bob, map[string]any{"priority": 3})
		if resp.StatusCode != 404 {
			t.Fatalf("bob %s alice's rule: %d %s", m, resp.StatusCode, body)
		}
	}
	resp, body = e.do("GET", "/api/classification-rules", bob, nil)
	e.expect(resp, body, 200)
	if strings.Contains(string(body), fmt.Sprintf(`"id":%d,`, mine)) || !strings.Contains(string(body), fmt.Sprintf(`"id":%d,`, bobs)) {
		t.Fatalf("bob's list %s", body)
	}
	if !strings.Contains(string(body), `"owner_id":"bob"`) {
		t.Fatalf("bob's rule owner: %s", body)
	}
	// A system rule (created by the admin of the single-user mode, seeded
	// here directly) is listed for everyone but only an admin changes it.
	_, err := e.DB.Pool.Exec(t.Context(), `INSERT INTO classification_rules (name, category, rule_type, pattern) VALUES ('sys', 'letter', 'content_keyword', 'dear')`)
	if err != nil {
		t.Fatal(err)
	}
	resp, body = e.do("GET", "/api/classification-rules", alice, nil)
	e.expect(resp, body, 200)
	if !strings.Contains(string(body), `"name":"sys"`) || strings.Count(string(body), `"id":`) != 2 {
		t.Fatalf("alice's list %s", body)
	}
	var sysID int64
	if err := e.DB.Pool.QueryRow(t.Context(), `SELECT id FROM classification_rules WHERE name='sys'`).Scan(&sysID); err != nil {
		t.Fatal(err)
	}
	resp, body = e.do("PUT", fmt.Sprintf("/api/classification-rules/%d", sysID), alice, map[string]any{"enabled": false})
	e.expect(resp, body, 403)
	resp, body = e.do("GET", fmt.Sprintf("/api/classification-rules/%d", sysID), alice, nil)
	e.expect(resp, body, 200)
	resp, body = e.do("DELETE", path, alice, nil)
	e.expect(resp, body, 204)
}
