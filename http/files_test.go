package http

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/streams"
)

func TestListFilesPaginationAndFilters(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("invoice-%02d.pdf", i)
		if i%3 == 0 {
			name = fmt.Sprintf("letter-%02d.pdf", i)
		}
		ids = append(ids, fe.mustUpload(name, pdf("list"+strconv.Itoa(i))))
	}
	png := fe.mustUpload("scan.png", pngHeader)
	// Shape the data: one completed with tags and a good score, one failed
	// with a poor score, one created long ago.
	score := func(v float64) *float64 { return &v }
	if _, err := fe.Files.UpdateFile(ctx, ids[1], func(f *docflow.File) error {
		f.Status = docflow.StatusCompleted
		f.AIMetadata = map[string]any{"tags": []any{"tax", "2024"}}
		f.OCRQualityScore = score(95)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := fe.Files.UpdateFile(ctx, ids[2], func(f *docflow.File) error {
		f.Status = docflow.StatusFailed
		f.OCRQualityScore = score(40)
		f.AIMetadata = map[string]any{"tags": []any{"tax"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := fe.DB.Pool.Exec(ctx, `UPDATE files SET created_at='2020-01-15T10:00:00Z' WHERE id=$1`, ids[4]); err != nil {
		t.Fatal(err)
	}

	get := func(q string) map[string]any {
		t.Helper()
		resp, body := fe.do("GET", "/api/files?"+q, "", nil)
		fe.expect(resp, body, 200)
		return fe.json(body)
	}
	idsOf := func(m map[string]any) []int64 {
		var out []int64
		for _, f := range m["files"].([]any) {
			out = append(out, int64(f.(map[string]any)["id"].(float64)))
		}
		return out
	}

	m := get("per_page=5")
	p := m["pagination"].(map[string]any)
	if p["total"].(float64) != 13 || p["pages"].(float64) != 3 || p["previous"] != nil || p["page"].(float64) != 1 || p["per_page"].(float64) != 5 {
		t.Fatalf("pagination %v", p)
	}
	next, _ := url.Parse(p["next"].(string))
	if !next.IsAbs() || next.Query().Get("page") != "2" || next.Query().Get("per_page") != "5" {
		t.Fatalf("next %v", p["next"])
	}
	first := m["files"].([]any)[0].(map[string]any)
	ps := first["processing_status"].(map[string]any)
	if first["id"].(float64) != float64(png) || first["mime_type"] != "image/png" || ps["status"] != "pending" || ps["total_steps"] == nil {
		t.Fatalf("default sort newest first: %v", first)
	}
	m = get("per_page=5&page=3")
	if p := m["pagination"].(map[string]any); p["next"] != nil || !strings.Contains(p["previous"].(string), "page=2") || len(m["files"].([]any)) != 3 {
		t.Fatalf("last page %v", m)
	}
	// Sorting.
	m = get("sort_by=id&sort_order=asc&per_page=200")
	got := idsOf(m)
	if got[0] != ids[0] || got[len(got)-1] != png {
		t.Fatalf("id asc %v", got)
	}
	m = get("sort_by=original_filename&sort_order=asc&per_page=1")
	if m["files"].([]any)[0].(map[string]any)["original_filename"] != "invoice-01.pdf" {
		t.Fatalf("name asc %v", m["files"])
	}
	// Filters, alone and together.
	checks := []struct {
		q    string
		want []int64
	}{
		{"search=LETTER-0", []int64{ids[9], ids[6], ids[3], ids[0]}},
		{"search=%25", nil}, // a literal % matches nothing
		{"status=completed", []int64{ids[1]}},
		{"status=failed&search=invoice", []int64{ids[2]}},
		{"mime_type=image/png", []int64{png}},
		{"tags=tax", []int64{ids[2], ids[1]}},
		{"tags=tax,2024", []int64{ids[1]}},
		{"ocr_quality=good", []int64{ids[1]}},
		{"ocr_quality=poor", []int64{ids[2]}},
		{"date_from=2020-01-15&date_to=2020-01-15", []int64{ids[4]}},
		{"date_to=2020-12-31&search=invoice&status=pending", []int64{ids[4]}},
		{"date_from=2021-01-01&search=invoice-04", nil},
	}
	for _, c := range checks {
		got := idsOf(get(c.q + "&per_page=200"))
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.q, got, c.want)
		}
	}
	if m := get("ocr_quality=unchecked"); m["pagination"].(map[string]any)["total"].(float64) != 11 {
		t.Errorf("unchecked %v", m["pagination"])
	}
	// Invalid parameters are 422.
	for _, q := range []string{"page=0", "page=x", "per_page=0", "per_page=201", "sort_by=owner_id", "sort_order=up",
		"status=done", "date_from=2024-13-01", "date_to=yesterday", "ocr_quality=meh"} {
		resp, body := fe.do("GET", "/api/files?"+q, "", nil)
		if resp.StatusCode != 422 {
			t.Errorf("%s: %d %s", q, resp.StatusCode, body)
		}
	}
}

func TestGetFileRecordMetadataPreviewDownload(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	ctx := context.Background()
	content := pdf("record")
	id := fe.mustUpload("Rechnung März.pdf", content)
	f, _ := fe.Files.FindFileByID(ctx, id)
	if _, err := fe.DB.Pool.Exec(ctx, `INSERT INTO run_steps (run_id, position, step_type, status) VALUES
		($1, 0, 'convert_to_pdf', 'completed'), ($1, 1, 'ocr', 'failed'), ($1, 2, 'classify', 'queued')`, f.TaskID); err != nil {
		t.Fatal(err)
	}
	if _, err := fe.DB.Pool.Exec(ctx, `INSERT INTO processing_logs (file_id, task_id, step_name, status, message, timestamp) VALUES
		($1, $2, 'ocr', 'failed', 'tesseract missing', '2030-01-01T00:00:02Z'),
		($1, $2, 'convert_to_pdf', 'completed', '', '2030-01-01T00:00:01Z')`, id, f.TaskID); err != nil {
		t.Fatal(err)
	}
	if _, err := fe.Files.UpdateFile(ctx, id, func(f *docflow.File) error {
		f.AIMetadata = map[string]any{"document_type": "invoice", "date": "2024-03-01", "sender": "ACME", "amount": "12.50"}
		f.OCRText = "hello text"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	resp, body := fe.do("GET", fmt.Sprintf("/api/files/%d", id), "", nil)
	fe.expect(resp, body, 200)
	var rec struct {
		File             map[string]any           `json:"file"`
		ProcessingStatus docflow.ProcessingStatus `json:"processing_status"`
		Logs             []map[string]any         `json:"logs"`
		FilesOnDisk      map[string]bool          `json:"files_on_disk"`
	}
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "filehash", "original_filename", "stored_filename", "file_size", "mime_type", "created_at", "owner_id", "pipeline_id", "document_title", "ocr_quality_score", "ai_metadata"} {
		if _, ok := rec.File[k]; !ok {
			t.Fatalf("record lacks %s: %s", k, body)
		}
	}
	if rec.ProcessingStatus != (docflow.ProcessingStatus{Status: "pending", LastStep: "ocr", HasErrors: true, TotalSteps: 3}) {
		t.Fatalf("status %+v", rec.ProcessingStatus)
	}
	// The listing shows the same summary, plain and through a search.
	for _, q := range []string{"", "?search=rechnung"} {
		resp, body = fe.do("GET", "/api/files"+q, "", nil)
		fe.expect(resp, body, 200)
		var list struct {
			Files []struct {
				ID               int64                    `json:"id"`
				ProcessingStatus docflow.ProcessingStatus `json:"processing_status"`
			} `json:"files"`
		}
		if err := json.Unmarshal(body, &list); err != nil || len(list.Files) != 1 || list.Files[0].ID != id ||
			list.Files[0].ProcessingStatus != rec.ProcessingStatus {
			t.Fatalf("listing%s: %s", q, body)
		}
	}
	if len(rec.Logs) != 2 || rec.Logs[0]["step_name"] != "convert_to_pdf" || rec.Logs[1]["message"] != "tesseract missing" || rec.Logs[0]["task_id"] != f.TaskID {
		t.Fatalf("logs %v", rec.Logs)
	}
	if !rec.FilesOnDisk["original"] || rec.FilesOnDisk["processed"] {
		t.Fatalf("on disk %v", rec.FilesOnDisk)
	}
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/metadata", id), "", nil)
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["document_type"] != "invoice" || m["vendor"] != "ACME" || m["amount"] != "12.50" || m["date"] != "2024-03-01" || m["extracted_text"] != "hello text" {
		t.Fatalf("metadata %v", m)
	}
	for _, p := range []string{"/api/files/999999", "/api/files/999999/metadata", "/api/files/999999/download", "/api/files/999999/preview?version=original"} {
		resp, body := fe.do("GET", p, "", nil)
		fe.expect(resp, body, 404)
	}
	resp, body = fe.do("GET", "/api/files/abc", "", nil)
	fe.expect(resp, body, 422)

	// Preview: version required, checked, served inline.
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/preview", id), "", nil)
	fe.expect(resp, body, 422)
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/preview?version=best", id), "", nil)
	fe.expect(resp, body, 400)
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/preview?version=processed", id), "", nil)
	fe.expect(resp, body, 404)
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/preview?version=original", id), "", nil)
	fe.expect(resp, body, 200)
	if !bytes.Equal(body, content) || resp.Header.Get("Content-Type") != "application/pdf" || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "inline;") {
		t.Fatalf("preview %q %v", body, resp.Header)
	}
	// Download: defaults to processed, falls back to the original; the
	// non-ASCII name travels as filename*.
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/download", id), "", nil)
	fe.expect(resp, body, 200)
	cd := resp.Header.Get("Content-Disposition")
	if !bytes.Equal(body, content) || !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, `filename="Rechnung M_rz.pdf"`) ||
		!strings.Contains(cd, "filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf") {
		t.Fatalf("download %q", cd)
	}
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/download?version=processed", id), "", nil)
	fe.expect(resp, body, 404)
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/download?version=bad", id), "", nil)
	fe.expect(resp, body, 400)
	// With a processed version it is the default.
	processed := pdf("processed version")
	info, err := fe.Blobs.Put(ctx, bytes.NewReader(processed), 0)
	if err != nil {
		t.Fatal(err)
	}
	fe.Files.UpdateFile(ctx, id, func(f *docflow.File) error { f.ProcessedBlob = info.Key; return nil })
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/download", id), "", nil)
	fe.expect(resp, body, 200)
	if !bytes.Equal(body, processed) {
		t.Fatal("download did not prefer the processed version")
	}
	// Missing on disk: 404.
	fe.Blobs.Delete(ctx, f.OriginalBlob)
	resp, body = fe.do("GET", fmt.Sprintf("/api/files/%d/preview?version=original", id), "", nil)
	fe.expect(resp, body, 404)
}

func TestDeleteFilesAndBlobs(t *testing.T) {
	// Serial: it times the refusal of 10,000 unknown ids.
	fe := newFilesEnv(t, map[string]string{"ENABLE_DEDUPLICATION": "false"})
	ctx := context.Background()
	shared := pdf("shared")
	a := fe.mustUpload("a.pdf", shared)
	b := fe.mustUpload("b.pdf", shared) // same blob, second record
	c := fe.mustUpload("c.pdf", pdf("c"))
	fa, _ := fe.Files.FindFileByID(ctx, a)
	fc, _ := fe.Files.FindFileByID(ctx, c)

	fe.SetEnv("ALLOW_FILE_DELETE", "false")
	resp, body := fe.do("DELETE", fmt.Sprintf("/api/files/%d", a), "", nil)
	fe.expect(resp, body, 403)
	resp, body = fe.do("POST", "/api/files/bulk-delete", "", []int64{a})
	fe.expect(resp, body, 403)
	fe.SetEnv("ALLOW_FILE_DELETE", "true")

	resp, body = fe.do("DELETE", fmt.Sprintf("/api/files/%d", a), "", nil)
	fe.expect(resp, body, 200)
	if ok, _ := fe.Blobs.Exists(ctx, fa.OriginalBlob); !ok {
		t.Fatal("blob still used by b was removed")
	}
	resp, body = fe.do("DELETE", fmt.Sprintf("/api/files/%d", a), "", nil)
	fe.expect(resp, body, 404)

	// Bulk: bad bodies first.
	for _, bad := range []any{`{"ids":[1]}`, `"1"`, "[1,", `["a"]`, []byte(""), "null"} {
		resp, body := fe.do("POST", "/api/files/bulk-delete", "", bad)
		if resp.StatusCode != 422 {
			t.Errorf("body %v: %d %s", bad, resp.StatusCode, body)
		}
	}
	// No ids, or none that exists: 404 No files found.
	for _, none := range []any{"[]", []int64{987654, 987655}} {
		resp, body = fe.do("POST", "/api/files/bulk-delete", "", none)
		fe.expect(resp, body, 404)
		if d := fe.json(body)["detail"]; d != "No files found" {
			t.Fatalf("%v: detail %v", none, d)
		}
	}
	many := make([]int64, MaxBulkIDs)
	for i := range many {
		many[i] = int64(1_000_000 + i)
	}
	start := time.Now()
	resp, body = fe.do("POST", "/api/files/bulk-delete", "", many)
	fe.expect(resp, body, 404)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("10,000 unknown ids took %v", d)
	}
	resp, body = fe.do("POST", "/api/files/bulk-delete", "", append(many, 1))
	fe.expect(resp, body, 422)

	resp, body = fe.do("POST", "/api/files/bulk-delete", "", []int64{b, c, 424242, b})
	fe.expect(resp, body, 200)
	m := fe.json(body)
	if m["status"] != "success" || fmt.Sprint(m["deleted_ids"]) != fmt.Sprint([]any{float64(b), float64(c)}) {
		t.Fatalf("bulk delete %v", m)
	}
	for _, k := range []string{fa.OriginalBlob, fc.OriginalBlob} {
		if ok, _ := fe.Blobs.Exists(ctx, k); ok {
			t.Fatalf("blob %s left after its last record went", k)
		}
	}
}

func TestReprocessSingleAndBulk(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	ctx := context.Background()
	a := fe.mustUpload("a.pdf", pdf("ra"))
	b := fe.mustUpload("b.pdf", pdf("rb"))
	fa, _ := fe.Files.FindFileByID(ctx, a)
	fe.Files.UpdateFile(ctx, a, func(f *docflow.File) error { f.Status = docflow.StatusFailed; return nil })

	resp, body := fe.do("POST", fmt.Sprintf("/api/files/%d/reprocess", a), "", nil)
	fe.expect(resp, body, 200)
	m := fe.json(body)
	task := m["task_id"].(string)
	if m["status"] != "success" || m["filename"] != "a.pdf" || m["file_id"].(float64) != float64(a) || task == fa.TaskID {
		t.Fatalf("reprocess %v", m)
	}
	after, _ := fe.Files.FindFileByID(ctx, a)
	if after.Status != "pending" || after.TaskID != task {
		t.Fatalf("file after reprocess %+v", after)
	}
	if n := fe.count(`SELECT count(*) FROM runs WHERE file_id=$1`, a); n != 2 {
		t.Fatalf("%d runs", n)
	}
	var payload []byte
	fe.DB.Pool.QueryRow(ctx, `SELECT payload FROM outbox WHERE topic=$1 ORDER BY id DESC LIMIT 1`, streams.TopicFilesIngested).Scan(&payload)
	if _, msg, err := streams.Decode[streams.FileIngested](payload); err != nil || msg.RunID != task || msg.FileID != a {
		t.Fatalf("outbox %+v %v", msg, err)
	}

	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/reprocess-with-cloud-ocr", b), "", nil)
	fe.expect(resp, body, 200)
	m = fe.json(body)
	if m["force_cloud_ocr"] != true {
		t.Fatalf("cloud %v", m)
	}
	var opts map[string]any
	fe.DB.Pool.QueryRow(ctx, `SELECT options FROM runs WHERE id=$1`, m["task_id"]).Scan(&opts)
	if opts["force_cloud_ocr"] != true {
		t.Fatalf("run options %v", opts)
	}

	resp, body = fe.do("POST", "/api/files/999999/reprocess", "", nil)
	fe.expect(resp, body, 404)
	// Original gone from disk: 400.
	fe.Blobs.Delete(ctx, fa.OriginalBlob)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/reprocess", a), "", nil)
	fe.expect(resp, body, 400)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/reprocess-with-cloud-ocr", a), "", nil)
	fe.expect(resp, body, 400)

	for _, path := range []string{"/api/files/bulk-reprocess", "/api/files/bulk-reprocess-cloud-ocr"} {
		resp, body = fe.do("POST", path, "", []int64{a, b, 555555})
		fe.expect(resp, body, 200)
		m = fe.json(body)
		pf := m["processed_files"].([]any)
		errs := m["errors"].([]any)
		if len(pf) != 1 || pf[0].(map[string]any)["file_id"].(float64) != float64(b) || len(m["task_ids"].([]any)) != 1 || len(errs) != 2 {
			t.Fatalf("%s %v", path, m)
		}
		resp, body = fe.do("POST", path, "", "[]")
		fe.expect(resp, body, 422)
		resp, body = fe.do("POST", path, "", `{"a":1}`)
		fe.expect(resp, body, 422)
	}
}

func TestBulkDownloadStreamsZip(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	ctx := context.Background()
	a := fe.mustUpload("same.pdf", pdf("za"))
	b := fe.mustUpload("same.pdf", pdf("zb"))
	gone := fe.mustUpload("gone.pdf", pdf("zgone"))
	fg, _ := fe.Files.FindFileByID(ctx, gone)
	fe.Blobs.Delete(ctx, fg.OriginalBlob)

	resp, body := fe.do("POST", "/api/files/bulk-download", "", []int64{a, b, gone, 777777})
	fe.expect(resp, body, 200)
	if resp.Header.Get("Content-Type") != "application/zip" || !strings.Contains(resp.Header.Get("Content-Disposition"), `filename="docflow_bulk_`) {
		t.Fatalf("headers %v", resp.Header)
	}
	zr, err := zip.NewReader(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		rc, _ := f.Open()
		data, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.HasPrefix(data, []byte("%PDF")) {
			t.Fatalf("%s content %q", f.Name, data)
		}
	}
	if strings.Join(names, "|") != "same.pdf|same (2).pdf" {
		t.Fatalf("entries %v", names)
	}
	resp, body = fe.do("POST", "/api/files/bulk-download", "", []int64{gone})
	fe.expect(resp, body, 404)
	resp, body = fe.do("POST", "/api/files/bulk-download", "", []int64{777777})
	fe.expect(resp, body, 404)
	resp, body = fe.do("POST", "/api/files/bulk-download", "", "[]")
	fe.expect(resp, body, 404) // 404 when none found, as for bulk-delete
	resp, body = fe.do("POST", "/api/files/bulk-download", "", `{"ids":[1]}`)
	fe.expect(resp, body, 422)
}

func TestAssignPipeline(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	id := fe.mustUpload("p.pdf", pdf("pipe"))
	var pid int64
	fe.DB.Pool.QueryRow(context.Background(), `SELECT id FROM pipelines LIMIT 1`).Scan(&pid)
	resp, body := fe.do("POST", fmt.Sprintf("/api/files/%d/assign-pipeline?pipeline_id=%d", id, pid), "", nil)
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["pipeline_id"].(float64) != float64(pid) || m["file_id"].(float64) != float64(id) {
		t.Fatalf("assign %v", m)
	}
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/assign-pipeline?pipeline_id=99999", id), "", nil)
	fe.expect(resp, body, 404)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/assign-pipeline?pipeline_id=x", id), "", nil)
	fe.expect(resp, body, 422)
	resp, body = fe.do("POST", fmt.Sprintf("/api/files/%d/assign-pipeline", id), "", nil)
	fe.expect(resp, body, 200)
	if m := fe.json(body); m["pipeline_id"] != nil {
		t.Fatalf("clear %v", m)
	}
	resp, body = fe.do("POST", "/api/files/424242/assign-pipeline", "", nil)
	fe.expect(resp, body, 404)
}

func TestContentDisposition(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"plain.pdf":  `attachment; filename="plain.pdf"`,
		`a"b\c.pdf`:  `attachment; filename="a_b_c.pdf"; filename*=UTF-8''a%22b%5Cc.pdf`,
		"日本.pdf":     `attachment; filename="__.pdf"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.pdf`,
		"a\r\nb.pdf": `attachment; filename="a__b.pdf"; filename*=UTF-8''a%0D%0Ab.pdf`,
	}
	for in, want := range cases {
		if got := ContentDisposition("attachment", in); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

// TestFileListOwnerAndSharedFilters: owner and shared_with_me narrow the
// list (the documents page's filters); a bad shared_with_me is 422 naming
// it. The single user owns nothing and has nothing shared with it.
func TestFileListOwnerAndSharedFilters(t *testing.T) {
	t.Parallel()
	fe := newFilesEnv(t, nil)
	fe.mustUpload("mine.pdf", pdf("mine"))
	count := func(query string) float64 {
		t.Helper()
		resp, body := fe.do("GET", "/api/files"+query, "", nil)
		fe.expect(resp, body, 200)
		return fe.json(body)["pagination"].(map[string]any)["total"].(float64)
	}
	if n := count(""); n != 1 {
		t.Fatalf("all: %v", n)
	}
	if n := count("?owner=someone"); n != 0 {
		t.Fatalf("owner=someone: %v", n)
	}
	if n := count("?shared_with_me=true"); n != 0 {
		t.Fatalf("shared_with_me=true: %v", n)
	}
	if n := count("?shared_with_me=false"); n != 1 {
		t.Fatalf("shared_with_me=false: %v", n)
	}
	resp, body := fe.do("GET", "/api/files?shared_with_me=maybe", "", nil)
	fe.expect(resp, body, 422)
	if !strings.Contains(string(body), "shared_with_me") {
		t.Fatalf("422 does not name the parameter: %s", body)
	}
}
