package intake

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"docflow"
	"docflow/storage/blob"
	"docflow/storage/postgres"
)

type memRecorder struct {
	mu sync.Mutex
	ms []docflow.Metric
}

func (r *memRecorder) Record(m docflow.Metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ms = append(r.ms, m)
}
func (r *memRecorder) Flush(context.Context) error { return nil }
func (r *memRecorder) Ping(context.Context) error  { return nil }
func (r *memRecorder) Close() error                { return nil }

// TestIntakeIsMeasured: every offered document gives one intake metric with
// its channel, type, bytes, outcome and duration.
func TestIntakeIsMeasured(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := postgres.OpenTestDB(ctx, "intake_metrics")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	blobs, err := blob.Open(t.TempDir(), blob.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rec := &memRecorder{}
	s, err := New(Config{Files: postgres.NewFileStore(db), Blobs: blobs, Settings: mapSettings{}, Log: zerolog.Nop(), Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	offer := func(name, body, channel string) {
		_, _ = s.Ingest(ctx, docflow.Upload{Filename: name, Body: strings.NewReader(body), Size: int64(len(body)), Channel: channel})
	}
	offer("a.pdf", "%PDF-1.4 one", docflow.ChannelUpload)
	offer("b.pdf", "%PDF-1.4 one", docflow.ChannelUpload) // same bytes: a duplicate
	offer("c.exe", "MZ", "email")                         // unsupported: rejected
	if len(rec.ms) != 3 {
		t.Fatalf("%d metrics, want 3: %+v", len(rec.ms), rec.ms)
	}
	a, b, c := rec.ms[0], rec.ms[1], rec.ms[2]
	if a.Kind != docflow.MetricIntake || a.Status != docflow.IntakeAccepted || a.Channel != docflow.ChannelUpload ||
		a.Type != "application/pdf" || a.Bytes != 12 || a.FileID == 0 || a.Duration <= 0 {
		t.Errorf("accepted upload %+v", a)
	}
	if b.Status != docflow.IntakeDuplicate {
		t.Errorf("duplicate %+v", b)
	}
	if c.Status != docflow.IntakeRejected || c.Channel != "email" || c.ErrorClass != docflow.EBADREQUEST || c.Type != "exe" {
		t.Errorf("rejected %+v", c)
	}
}
