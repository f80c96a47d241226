package http

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"docflow"
)

func TestSavedSearchesAPI(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, nil)
	resp, body := se.do("GET", "/api/saved-searches", "", nil)
	se.expect(resp, body, 200)
	if strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("empty list %s", body)
	}
	resp, body = se.do("POST", "/api/saved-searches", "", map[string]any{
		"name":    "  Tax 2024 ",
		"filters": map[string]any{"q": "invoice", "tags": "tax", "date_from": 1700000000, "evil": "<script>", "sort_by": nil},
	})
	se.expect(resp, body, 201)
	m := se.json(body)
	f := m["filters"].(map[string]any)
	if m["name"] != "Tax 2024" || len(f) != 3 || f["q"] != "invoice" || f["date_from"].(float64) != 1700000000 || f["evil"] != nil ||
		m["id"] == nil || m["created_at"] == nil || m["updated_at"] == nil {
		t.Fatalf("created %s", body)
	}
	id := int64(m["id"].(float64))

	for _, tc := range []struct {
		name string
		body any
	}{
		{"only unknown keys", map[string]any{"name": "x", "filters": map[string]any{"colour": "red"}}},
		{"empty filters", map[string]any{"name": "x", "filters": map[string]any{}}},
		{"missing filters", map[string]any{"name": "x"}},
		{"filters not an object", map[string]any{"name": "x", "filters": "q=invoice"}},
		{"nested value", map[string]any{"name": "x", "filters": map[string]any{"q": map[string]any{"$ne": 1}}}},
		{"missing name", map[string]any{"filters": map[string]any{"q": "x"}}},
		{"blank name", map[string]any{"name": "  ", "filters": map[string]any{"q": "x"}}},
		{"long name", map[string]any{"name": strings.Repeat("n", 201), "filters": map[string]any{"q": "x"}}},
		{"name not a string", map[string]any{"name": 5, "filters": map[string]any{"q": "x"}}},
		{"malformed JSON", "{"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := se.do("POST", "/api/saved-searches", "", tc.body)
			se.expect(resp, body, 422)
		})
	}

	// Unique names.
	resp, body = se.do("POST", "/api/saved-searches", "", map[string]any{"name": "Tax 2024", "filters": map[string]any{"q": "y"}})
	se.expect(resp, body, 409)

	// Update: name and filters are each optional.
	resp, body = se.do("PUT", fmt.Sprintf("/api/saved-searches/%d", id), "", map[string]any{"filters": map[string]any{"sender": "Acme", "junk": 1}})
	se.expect(resp, body, 200)
	if m := se.json(body); m["name"] != "Tax 2024" || len(m["filters"].(map[string]any)) != 1 {
		t.Fatalf("update filters %s", body)
	}
	resp, body = se.do("PUT", fmt.Sprintf("/api/saved-searches/%d", id), "", map[string]any{"name": "Renamed"})
	se.expect(resp, body, 200)
	if m := se.json(body); m["name"] != "Renamed" || m["filters"].(map[string]any)["sender"] != "Acme" {
		t.Fatalf("update name %s", body)
	}
	resp, body = se.do("PUT", fmt.Sprintf("/api/saved-searches/%d", id), "", map[string]any{"filters": map[string]any{"junk": 1}})
	se.expect(resp, body, 422)
	resp, body = se.do("PUT", "/api/saved-searches/999999", "", map[string]any{"name": "x"})
	se.expect(resp, body, 404)
	resp, body = se.do("PUT", "/api/saved-searches/abc", "", map[string]any{"name": "x"})
	se.expect(resp, body, 422)

	// 50 per user.
	for i := 1; i < 50; i++ {
		resp, body = se.do("POST", "/api/saved-searches", "", map[string]any{"name": fmt.Sprintf("s%d", i), "filters": map[string]any{"q": "x"}})
		se.expect(resp, body, 201)
	}
	resp, body = se.do("POST", "/api/saved-searches", "", map[string]any{"name": "one too many", "filters": map[string]any{"q": "x"}})
	se.expect(resp, body, 409)
	resp, body = se.do("GET", "/api/saved-searches", "", nil)
	se.expect(resp, body, 200)
	if n := strings.Count(string(body), `"id":`); n != 50 {
		t.Fatalf("%d saved searches listed", n)
	}

	resp, body = se.do("DELETE", fmt.Sprintf("/api/saved-searches/%d", id), "", nil)
	se.expect(resp, body, 204)
	resp, body = se.do("DELETE", fmt.Sprintf("/api/saved-searches/%d", id), "", nil)
	se.expect(resp, body, 404)
	resp, body = se.do("POST", "/api/saved-searches", "", map[string]any{"name": "one too many", "filters": map[string]any{"q": "x"}})
	se.expect(resp, body, 201)
}

func TestSavedSearchesArePerUser(t *testing.T) {
	t.Parallel()
	se, _ := newSrchEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"})
	alice, bob := se.token("alice"), se.token("bob")
	resp, body := se.do("POST", "/api/saved-searches", alice, map[string]any{"name": "Mine", "filters": map[string]any{"q": "x"}})
	se.expect(resp, body, 201)
	id := int64(se.json(body)["id"].(float64))
	// The same name for another user is fine.
	resp, body = se.do("POST", "/api/saved-searches", bob, map[string]any{"name": "Mine", "filters": map[string]any{"q": "y"}})
	se.expect(resp, body, 201)
	resp, body = se.do("GET", "/api/saved-searches", bob, nil)
	se.expect(resp, body, 200)
	if strings.Count(string(body), `"id":`) != 1 || !strings.Contains(string(body), `"q":"y"`) {
		t.Fatalf("bob's list %s", body)
	}
	resp, body = se.do("PUT", fmt.Sprintf("/api/saved-searches/%d", id), bob, map[string]any{"name": "Stolen"})
	se.expect(resp, body, 404)
	resp, body = se.do("DELETE", fmt.Sprintf("/api/saved-searches/%d", id), bob, nil)
	se.expect(resp, body, 404)
	resp, body = se.do("GET", "/api/saved-searches", "", nil)
	se.expect(resp, body, 401)
}

// FuzzSavedSearchFilters: any body either fails validation or yields a
// non-empty object of allowed keys with plain values.
func FuzzSavedSearchFilters(f *testing.F) {
	for _, seed := range []string{`{"q":"x"}`, `{"tags":["a","b"],"junk":1}`, `{}`, `null`, `[]`, `{"q":{"a":1}}`,
		`{"date_from":1e400}`, `{"q":"\u0000"}`, `"str"`, `{"q":null,"sender":true}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		out, err := savedSearchFilters(json.RawMessage(body))
		if err != nil {
			if docflow.ErrorCode(err) != docflow.EINVALID {
				t.Fatalf("error %v is not a validation error", err)
			}
			return
		}
		if len(out) == 0 {
			t.Fatal("empty filters accepted")
		}
		for k, v := range out {
			if !searchContains(docflow.SavedSearchFilterKeys, k) || !savedSearchValue(v, true) {
				t.Fatalf("kept %q: %v", k, v)
			}
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("filters cannot be stored: %v", err)
		}
	})
}
