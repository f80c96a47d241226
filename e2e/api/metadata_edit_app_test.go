package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"docflow"
	"docflow/internal/app/apptest"
	"docflow/internal/testsupport"
)

// PATCH /api/files/{id}/metadata over the whole process: the share roles
// decide who may edit, bad fields are 422 naming them, and an edit reaches
// the search index, the audit log and a webhook as document.updated.
func TestMetadataEditOverTheAPI(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []map[string]any
	recv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			mu.Lock()
			got = append(got, m)
			mu.Unlock()
		}
		w.WriteHeader(204)
	}))
	defer recv.Close()
	re := newRoleEnvWith(t, apptest.Options{Env: map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true",
		"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}})
	re.must(rAdmin, "POST", "/api/webhooks/", map[string]any{"url": recv.URL + "/hook",
		"events": []string{docflow.EventDocumentUpdated}, "description": "edits"}, 201)
	id := re.doc([]float32{1, 0})
	path := fmt.Sprintf("/api/files/%d/metadata", id)

	// Rights: the file's share role table.
	edit := map[string]any{"title": "Quokka quarterly report"}
	re.must(rViewer, "PATCH", path, edit, 403)
	re.must(rStranger, "PATCH", path, edit, 403)

	// Bad fields: 422 naming each one.
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"document_date": "31/12/2024"}, "document_date"},
		{map[string]any{"tags": "a,b"}, "tags"},
		{map[string]any{"title": strings.Repeat("x", 201)}, "title"},
		{map[string]any{"colour": "red"}, "colour"},
		{map[string]any{"ai_metadata": map[string]any{"iban": "DE00 1234"}}, "ai_metadata.iban"},
		{map[string]any{"ai_metadata": map[string]any{"classification": "x"}}, "ai_metadata.classification"},
		{map[string]any{"ai_metadata": map[string]any{"amount": "lots"}}, "ai_metadata.amount"},
		{map[string]any{}, "body"},
	} {
		var e struct {
			Detail string               `json:"detail"`
			Errors []docflow.FieldError `json:"errors"`
		}
		if err := json.Unmarshal(re.must(rEditor, "PATCH", path, c.body, 422), &e); err != nil ||
			len(e.Errors) == 0 || e.Errors[0].Field != c.field || c.field != "body" && !strings.Contains(e.Detail, strings.TrimPrefix(c.field, "ai_metadata.")) {
			t.Errorf("%v: %+v (%v), want the field %s named", c.body, e, err, c.field)
		}
	}

	// The editor edits; the answer is the file record and what changed.
	var res struct {
		File struct {
			DocumentTitle *string        `json:"document_title"`
			AIMetadata    map[string]any `json:"ai_metadata"`
		} `json:"file"`
		Changed []string `json:"changed"`
	}
	body := re.must(rEditor, "PATCH", path, map[string]any{"title": " Quokka quarterly report ", "document_date": "2026-03-31",
		"tags": []string{"Finance", "finance", "Q1"}, "correspondent": "Quokka Ltd", "document_type": "Annual Report",
		"ai_metadata": map[string]any{"amount": 1234.5, "currency": "eur", "iban": "DE89 3704 0044 0532 0130 00"}}, 200)
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	m := res.File.AIMetadata
	if res.File.DocumentTitle == nil || *res.File.DocumentTitle != "Quokka quarterly report" || m["title"] != "Quokka quarterly report" ||
		m["date"] != "2026-03-31" || fmt.Sprint(m["tags"]) != "[finance q1]" || m["sender"] != "Quokka Ltd" ||
		m["document_type"] != "annual_report" || m["amount"] != "1234.50" || m["currency"] != "EUR" || m["iban"] != "DE89370400440532013000" {
		t.Fatalf("edited record: %s", body)
	}
	want := []string{"title", "document_date", "tags", "correspondent", "document_type", "ai_metadata.amount",
		"ai_metadata.currency", "ai_metadata.iban"}
	if !slices.Equal(res.Changed, want) {
		t.Errorf("changed %v, want %v", res.Changed, want)
	}
	// The same edit again changes nothing (and announces nothing).
	json.Unmarshal(re.must(rOwner, "PATCH", path, map[string]any{"title": "Quokka quarterly report"}, 200), &res) //nolint:errcheck
	if len(res.Changed) != 0 {
		t.Errorf("a repeated edit changed %v", res.Changed)
	}
	// Clearing: null and "" both remove (decoded afresh: Unmarshal merges
	// into a map it is given).
	res.File.AIMetadata = nil
	json.Unmarshal(re.must(rOwner, "PATCH", path, map[string]any{"correspondent": nil, "ai_metadata": map[string]any{"iban": ""}}, 200), &res) //nolint:errcheck
	if _, ok := res.File.AIMetadata["sender"]; ok || !slices.Equal(res.Changed, []string{"correspondent", "ai_metadata.iban"}) {
		t.Errorf("clearing: changed %v, metadata %v", res.Changed, res.File.AIMetadata)
	}

	// Search finds the document by its new title.
	testsupport.WaitFor(t, 3*time.Minute, "search to see the new title", func() bool {
		_, b := re.do(rOwner, "GET", "/api/search?q="+url.QueryEscape("quokka"), nil)
		return strings.Contains(string(b), fmt.Sprintf(`"file_id":%d`, id))
	})

	// The audit log names the edit.
	var log struct {
		Entries []docflow.AuditEntry `json:"entries"`
	}
	json.Unmarshal(re.must(rAdmin, "GET", "/api/admin/audit-log?action="+docflow.AuditFileMetadataUpdate, nil, 200), &log) //nolint:errcheck
	if len(log.Entries) != 2 || log.Entries[len(log.Entries)-1].Actor != roleUsers[rEditor] ||
		!strings.Contains(log.Entries[len(log.Entries)-1].Detail, "changed title, document_date") {
		t.Errorf("audit log: %+v", log.Entries)
	}

	// The webhook receives document.updated with what changed.
	testsupport.WaitFor(t, 3*time.Minute, "the webhook to receive document.updated twice", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	first := got[0]
	for _, ev := range got {
		if d, _ := ev["data"].(map[string]any); d != nil && fmt.Sprint(d["changed"]) == fmt.Sprint(want) {
			first = ev
		}
	}
	d, _ := first["data"].(map[string]any)
	if first["event"] != docflow.EventDocumentUpdated || d == nil || d["file_id"] != float64(id) ||
		d["title"] != "Quokka quarterly report" || d["owner_id"] != roleUsers[rOwner] || fmt.Sprint(d["changed"]) != fmt.Sprint(want) {
		t.Errorf("webhook body: %v", got)
	}
}

// A document still being processed cannot be edited: its extraction would
// overwrite the edit.
func TestMetadataEditWaitsForProcessing(t *testing.T) {
	t.Parallel()
	re := newRoleEnv(t)
	id := re.doc([]float32{0, 1})
	if _, err := re.a.DB.Pool.Exec(t.Context(), `UPDATE files SET status='processing' WHERE id=$1`, id); err != nil {
		t.Fatal(err)
	}
	b := re.must(rOwner, "PATCH", fmt.Sprintf("/api/files/%d/metadata", id), map[string]any{"title": "Early"}, 409)
	if !strings.Contains(string(b), "still being processed") {
		t.Errorf("409 body: %s", b)
	}
}
