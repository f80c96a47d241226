package http

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"docflow"
	"docflow/storage/postgres"
)

// A file record's processing_status names the pipeline its latest run
// follows (null until the run is routed); the record's own pipeline_id
// stays the assigned one.
func TestFileRecordNamesTheRunsPipeline(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	ctx := context.Background()
	id := fe.mustUpload("routed.pdf", pdf("routed"))
	f, err := fe.Files.FindFileByID(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	type record struct {
		File             map[string]any `json:"file"`
		ProcessingStatus map[string]any `json:"processing_status"`
	}
	get := func() record {
		t.Helper()
		resp, body := fe.do("GET", fmt.Sprintf("/api/files/%d", id), "", nil)
		fe.expect(resp, body, 200)
		var rec record
		if err := json.Unmarshal(body, &rec); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	rec := get()
	for _, k := range []string{"pipeline_id", "pipeline_name"} {
		if v, ok := rec.ProcessingStatus[k]; !ok || v != nil {
			t.Fatalf("before routing, processing_status.%s = %v (present %v)", k, v, ok)
		}
	}

	// Routed by a rule (as the router records it): the run follows the
	// pipeline, the file was never assigned one.
	p := &docflow.Pipeline{Name: "Invoices", IsActive: true,
		Steps: []*docflow.PipelineStep{{StepType: docflow.StepOCR, Enabled: true}}}
	if err := postgres.NewPipelineStore(fe.DB).CreatePipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	w, err := postgres.NewRunStore(fe.DB).StartRun(ctx, f.TaskID, id, &p.ID, p.Steps, "routing rule")
	if err != nil || !w.Recorded {
		t.Fatalf("route: %+v %v", w, err)
	}
	rec = get()
	if rec.ProcessingStatus["pipeline_id"] != float64(p.ID) || rec.ProcessingStatus["pipeline_name"] != "Invoices" {
		t.Fatalf("processing_status %v, want pipeline %d Invoices", rec.ProcessingStatus, p.ID)
	}
	if rec.File["pipeline_id"] != nil {
		t.Fatalf("file.pipeline_id %v, want null (not assigned)", rec.File["pipeline_id"])
	}
	if rec.ProcessingStatus["total_steps"] != float64(1) || rec.ProcessingStatus["status"] != "pending" {
		t.Fatalf("processing_status %v", rec.ProcessingStatus)
	}

	// The listing's summary stays as it was.
	resp, body := fe.do("GET", "/api/files", "", nil)
	fe.expect(resp, body, 200)
	var list struct {
		Files []struct {
			ProcessingStatus map[string]any `json:"processing_status"`
		} `json:"files"`
	}
	if err := json.Unmarshal(body, &list); err != nil || len(list.Files) != 1 {
		t.Fatalf("listing %s %v", body, err)
	}
	if _, ok := list.Files[0].ProcessingStatus["pipeline_id"]; ok {
		t.Fatalf("listing summary %v", list.Files[0].ProcessingStatus)
	}
}

// storage_provider takes one kind of destination or several (any of them),
// in any case.
func TestListFilesByStorageProvider(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	ctx := context.Background()
	delivered := fe.mustUpload("delivered.pdf", pdf("delivered"))
	fe.mustUpload("kept.pdf", pdf("kept"))
	if _, err := fe.DB.Pool.Exec(ctx, `UPDATE files SET storage_providers = '{local,webdav}' WHERE id=$1`, delivered); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"webdav": 1, "WebDAV": 1, "s3": 0, "s3,%20local": 1, "": 2} {
		resp, body := fe.do("GET", "/api/files?storage_provider="+q, "", nil)
		fe.expect(resp, body, 200)
		var list struct {
			Files []struct {
				ID int64 `json:"id"`
			} `json:"files"`
		}
		if err := json.Unmarshal(body, &list); err != nil || len(list.Files) != want || (want == 1 && list.Files[0].ID != delivered) {
			t.Errorf("storage_provider=%s: %s, want %d files", q, body, want)
		}
	}
}

// TestAssignPipelineChecksThePipeline: a file is assigned only a pipeline
// its user may use, as a routing rule's target: their own or a system
// pipeline; another user's private pipeline answers 404 like an unknown
// one, but for an administrator.
func TestAssignPipelineChecksThePipeline(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, map[string]string{"AUTH_ENABLED": "true", "MULTI_USER_ENABLED": "true"})
	ctx := context.Background()
	alice, admin := fe.token("alice"), fe.token("admin")
	resp, m := fe.upload("/api/upload", alice, "alice.pdf", pdf("assign"))
	if resp.StatusCode != 201 {
		t.Fatalf("%d %v", resp.StatusCode, m)
	}
	file := int64(m["file_id"].(float64))
	pipelines := postgres.NewPipelineStore(fe.DB)
	pipeline := func(name string, owner *string) int64 {
		t.Helper()
		p := &docflow.Pipeline{Name: name, OwnerID: owner, IsActive: true,
			Steps: []*docflow.PipelineStep{{StepType: docflow.StepOCR, Enabled: true}}}
		if err := pipelines.CreatePipeline(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	a, b := "alice", "bob"
	own, bobs, system := pipeline("mine", &a), pipeline("private", &b), pipeline("system", nil)
	for _, tc := range []struct {
		who, token string
		pipeline   int64
		want       int
	}{
		{"alice, her own", alice, own, 200},
		{"alice, a system pipeline", alice, system, 200},
		{"alice, bob's", alice, bobs, 404},
		{"alice, none such", alice, 999999, 404},
		{"an administrator, bob's", admin, bobs, 200},
	} {
		resp, body := fe.do("POST", fmt.Sprintf("/api/files/%d/assign-pipeline?pipeline_id=%d", file, tc.pipeline), tc.token, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.who, resp.StatusCode, tc.want, body)
		}
	}
	var got *int64
	if err := fe.DB.Pool.QueryRow(ctx, `SELECT pipeline_id FROM files WHERE id=$1`, file).Scan(&got); err != nil || got == nil || *got != bobs {
		t.Fatalf("pipeline_id %v (%v), want the administrator's choice %d", got, err, bobs)
	}
}
