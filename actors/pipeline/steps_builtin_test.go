package pipeline

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"docflow"
	"docflow/streams"
)

func TestCheckDuplicatesStopsTheRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("dedup", map[string]any{"type": docflow.StepCheckDuplicates}, map[string]any{"title": "after"})
	orig, _ := e.ingest("orig.pdf", "same bytes", &p.ID, nil)
	e.waitTerminal(time.Minute, orig)
	dup, dupRun := e.ingest("copy.pdf", "same bytes", &p.ID, nil)
	other, _ := e.ingest("other.pdf", "other bytes", &p.ID, nil)
	got := e.waitTerminal(time.Minute, dup, other)
	if e.fileStatus(orig) != docflow.StatusCompleted || got[dup] != docflow.StatusDuplicate || got[other] != docflow.StatusCompleted {
		t.Fatalf("statuses orig %s dup %s other %s", e.fileStatus(orig), got[dup], got[other])
	}
	var dupOf *int64
	var title *string
	if err := e.DB.Pool.QueryRow(e.ctx, `SELECT duplicate_of, document_title FROM files WHERE id=$1`, dup).Scan(&dupOf, &title); err != nil {
		t.Fatal(err)
	}
	if dupOf == nil || *dupOf != orig || title != nil {
		t.Fatalf("duplicate_of %v title %v", dupOf, title)
	}
	r := e.run(dupRun)
	if r.Status != docflow.RunDuplicate || r.Steps[0].Status != docflow.StepSucceeded || r.Steps[1].Status != docflow.StepQueued ||
		!strings.Contains(r.Steps[0].Message, "Duplicate of file") {
		t.Fatalf("run %+v %+v %+v", r, r.Steps[0], r.Steps[1])
	}
	found := false
	for _, ev := range e.outbox(streams.TopicEvents) {
		if strings.Contains(ev["payload"], dupRun) && strings.Contains(ev["payload"], `"status":"duplicate"`) {
			found = true
		}
	}
	if !found {
		t.Fatal("no document.processed event for the duplicate")
	}
}

func TestSendToLocalDestination(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	p := e.pipeline("deliver", map[string]any{"type": docflow.StepSendToDestinations})
	// Without LOCAL_DESTINATION_DIR the step is skipped.
	skipped, skippedRun := e.ingest("nowhere.pdf", "nowhere", &p.ID, nil)
	e.waitTerminal(time.Minute, skipped)
	if r := e.run(skippedRun); r.Steps[0].Status != docflow.StepSkipped {
		t.Fatalf("step %+v", r.Steps[0])
	}
	dir := t.TempDir()
	e.setDestDir(dir)
	owner := "alice@example.com"
	id, run := e.ingest("report.pdf", "report bytes", &p.ID, &owner)
	if s := e.waitTerminal(time.Minute, id)[id]; s != docflow.StatusCompleted {
		t.Fatalf("status %s logs %+v", s, e.logs(id))
	}
	want := filepath.Join(dir, owner, strconv.FormatInt(id, 10)+"_report.pdf")
	b, err := os.ReadFile(want)
	if err != nil || string(b) != "report bytes" {
		t.Fatalf("delivered file %s: %q %v", want, b, err)
	}
	var dest, status, remote string
	if err := e.DB.Pool.QueryRow(e.ctx, `SELECT destination, status, remote_path FROM deliveries WHERE run_id=$1`, run).Scan(&dest, &status, &remote); err != nil {
		t.Fatal(err)
	}
	if dest != "local" || status != "delivered" || remote != want {
		t.Fatalf("delivery %s %s %s", dest, status, remote)
	}
	// A folder that cannot be written fails the attempt and is retried,
	// then the file fails with the reason.
	e.setDestDir("/proc/forbidden")
	bad, badRun := e.ingest("bad.pdf", "bad bytes", &p.ID, nil)
	if s := e.waitTerminal(time.Minute, bad)[bad]; s != docflow.StatusFailed {
		t.Fatalf("status %s", s)
	}
	if r := e.run(badRun); r.Steps[0].Attempts != 3 || !strings.Contains(r.Steps[0].Message, "local") {
		t.Fatalf("step %+v", r.Steps[0])
	}
}
