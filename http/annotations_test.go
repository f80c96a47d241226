package http

import (
	"fmt"
	"strings"
	"testing"

	"docflow"
)

func TestAnnotations(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, multiUser())
	alice, bob, carol, dave := ce.token("alice"), ce.token("bob"), ce.token("carol"), ce.token("dave")
	f, other := ce.file("alice"), ce.file("alice")
	base := fmt.Sprintf("/api/files/%d", f)
	ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "bob", "role": "editor"}, 201)
	ce.call("POST", base+"/shares", alice, map[string]any{"shared_with_user_id": "carol", "role": "viewer"}, 201)

	a := ce.call("POST", base+"/annotations", bob, map[string]any{"page": 2, "x": 0.1, "y": 0.2, "width": 0.9, "height": 0.1,
		"content": "Summe prüfen", "annotation_type": "highlight", "color": "#FFAA00"}, 201)
	if a["color"] != "#ffaa00" || a["page"].(float64) != 2 || a["user_id"] != "bob" || a["content"] != "Summe prüfen" {
		t.Fatalf("annotation %v", a)
	}
	aID := int64(a["id"].(float64))
	// Defaults: a note in yellow, a point (no width or height).
	n := ce.call("POST", base+"/annotations", alice, map[string]any{"page": 2, "x": 0.5, "y": 0.5}, 201)
	if n["annotation_type"] != "note" || n["color"] != "#ffff00" || n["content"] != "" || n["width"].(float64) != 0 {
		t.Fatalf("defaults %v", n)
	}
	ce.call("POST", base+"/annotations", alice, map[string]any{"page": 1, "x": 0, "y": 0, "width": 1, "height": 1,
		"annotation_type": "strikethrough"}, 201)
	ce.call("POST", base+"/annotations", carol, map[string]any{"page": 1, "x": 0, "y": 0}, 403)
	ce.call("POST", base+"/annotations", dave, map[string]any{"page": 1, "x": 0, "y": 0}, 403)

	resp, b := ce.do("GET", base+"/annotations", carol, nil)
	ce.expect(resp, b, 200)
	var list struct {
		FileID      int64                 `json:"file_id"`
		Annotations []*docflow.Annotation `json:"annotations"`
		Total       int                   `json:"total"`
	}
	decode(t, b, &list)
	if list.FileID != f || list.Total != 3 || list.Annotations[0].Page != 1 || list.Annotations[1].ID != aID ||
		list.Annotations[2].AnnotationType != "note" {
		t.Fatalf("listing %s", b)
	}
	ce.call("GET", base+"/annotations", dave, nil, 403)

	// PUT takes any subset; the result is checked as a whole.
	u := ce.call("PUT", fmt.Sprintf("%s/annotations/%d", base, aID), bob, map[string]any{"content": "ok", "annotation_type": "underline"}, 200)
	if u["content"] != "ok" || u["annotation_type"] != "underline" || u["x"].(float64) != 0.1 || u["color"] != "#ffaa00" {
		t.Fatalf("put %v", u)
	}
	resp, b = ce.do("PUT", fmt.Sprintf("%s/annotations/%d", base, aID), bob, map[string]any{"x": 0.2})
	ce.expect(resp, b, 422) // 0.2 + 0.9 leaves the page
	if !strings.Contains(string(b), `"field":"width"`) {
		t.Fatalf("region error %s", b)
	}
	ce.call("PUT", fmt.Sprintf("%s/annotations/%d", base, aID), alice, map[string]any{"content": "owner"}, 403)
	ce.call("DELETE", fmt.Sprintf("%s/annotations/%d", base, aID), alice, nil, 403)
	ce.call("PUT", fmt.Sprintf("%s/annotations/999999", base), bob, map[string]any{"content": "x"}, 404)
	ce.call("PUT", fmt.Sprintf("/api/files/%d/annotations/%d", other, aID), bob, map[string]any{"content": "x"}, 403)
	ce.call("DELETE", fmt.Sprintf("/api/files/%d/annotations/%d", other, aID), alice, nil, 404)
	ce.call("DELETE", fmt.Sprintf("%s/annotations/%d", base, aID), bob, nil, 204)
	ce.call("DELETE", fmt.Sprintf("%s/annotations/%d", base, aID), bob, nil, 404)
}

func TestAnnotationsBadInput(t *testing.T) {
	t.Parallel()
	ce := newCollabEnv(t, multiUser())
	alice := ce.token("alice")
	base := fmt.Sprintf("/api/files/%d", ce.file("alice"))
	ok := func(over map[string]any) map[string]any {
		m := map[string]any{"page": 1, "x": 0.1, "y": 0.1, "width": 0.2, "height": 0.2}
		for k, v := range over {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		body  any
		field string
	}{
		{ok(map[string]any{"page": 0}), "page"},
		{ok(map[string]any{"page": -3}), "page"},
		{ok(map[string]any{"page": 1.5}), "page"},
		{ok(map[string]any{"page": "1"}), "page"},
		{ok(map[string]any{"page": nil}), "page"},
		{ok(map[string]any{"x": nil}), "x"},
		{ok(map[string]any{"x": -0.1}), "x"},
		{ok(map[string]any{"y": 1.5}), "y"},
		{ok(map[string]any{"width": 2}), "width"},
		{ok(map[string]any{"height": -1}), "height"},
		{ok(map[string]any{"x": 0.5, "width": 0.6}), "width"},
		{ok(map[string]any{"y": 0.95, "height": 0.1}), "height"},
		{ok(map[string]any{"x": "left"}), "x"},
		{ok(map[string]any{"color": "yellow"}), "color"},
		{ok(map[string]any{"color": "#ffff0"}), "color"},
		{ok(map[string]any{"color": "#gggggg"}), "color"},
		{ok(map[string]any{"annotation_type": "circle"}), "annotation_type"},
		{ok(map[string]any{"content": strings.Repeat("z", docflow.MaxAnnotationContent+1)}), "content"},
		{ok(map[string]any{"content": 7}), "content"},
		{`{"page": 1,`, ""},
	} {
		resp, b := ce.do("POST", base+"/annotations", alice, tc.body)
		ce.expect(resp, b, 422)
		if tc.field != "" && !strings.Contains(string(b), `"field":"`+tc.field+`"`) {
			t.Errorf("%.80v: %s does not name %s", tc.body, b, tc.field)
		}
	}
	ce.call("POST", "/api/files/999999/annotations", alice, ok(nil), 404)
	ce.call("POST", base+"/annotations", alice, ok(map[string]any{"content": strings.Repeat("z", docflow.MaxAnnotationContent)}), 201)
}
