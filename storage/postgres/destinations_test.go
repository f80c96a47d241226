package postgres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"docflow"
)

func destinationTask(integrationID, deliveryID, request int64) (docflow.OutboxMessage, error) {
	b, err := json.Marshal(map[string]any{"kind": "deliver", "integration_id": integrationID, "delivery_id": deliveryID, "request": request,
		"attempt": 1})
	return docflow.OutboxMessage{Topic: "docflow.destinations", Payload: b}, err
}

// The store's rules: a run queues once; send-to makes a new request, and
// an outcome of the older one records nothing; several outcomes go in one
// transaction; the SQL-built task messages say what the Go ones say.
func TestDestinationStore(t *testing.T) {
	ctx := context.Background()
	db, cleanup, err := OpenTestDB(ctx, "dest")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	c, err := NewCipher(strings.Repeat("s", 40))
	if err != nil {
		t.Fatal(err)
	}
	s := NewDestinationStore(db, c, destinationTask)
	integ := NewIntegrationStore(db, c)
	mk := func(name string, active bool) *docflow.Integration {
		in := &docflow.Integration{OwnerID: "ann", Direction: docflow.DirectionDestination, IntegrationType: docflow.IntegrationWebDAV,
			Name: name, Config: map[string]any{"url": "https://dav.example.com"}, Credentials: map[string]string{"password": "pw"}, IsActive: active}
		if err := integ.CreateIntegration(ctx, in, true); err != nil {
			t.Fatal(err)
		}
		return in
	}
	a, b := mk("A", true), mk("B", true)
	mk("off", false)
	owner := "ann"
	f := &docflow.File{OriginalFilename: "x.pdf", OwnerID: &owner}
	if err := db.Pool.QueryRow(ctx, `INSERT INTO files (filehash, original_filename, stored_filename, file_size, mime_type, owner_id)
		VALUES ('h', 'x.pdf', 'x.pdf', 1, 'application/pdf', 'ann') RETURNING id`).Scan(&f.ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	q, err := s.EnqueueFileDeliveries(ctx, f, "ann", "run-1", &docflow.FileDestination{Name: "LOCAL_DESTINATION_DIR",
		Status: docflow.DestinationDelivered, RemotePath: "ann/1_x.pdf", DeliveredAt: &now})
	if err != nil || len(q) != 2 || q[0].Name != "A" || q[1].Name != "B" || q[0].Status != docflow.DestinationQueued {
		t.Fatalf("enqueue: %+v %v", q, err)
	}
	if q, err := s.EnqueueFileDeliveries(ctx, f, "ann", "run-1", nil); err != nil || len(q) != 0 {
		t.Fatalf("again: %+v %v", q, err)
	}
	var payloads []string
	rows, err := db.Pool.Query(ctx, `SELECT convert_from(payload, 'UTF8') FROM outbox WHERE topic = 'docflow.destinations' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var p string
		rows.Scan(&p) //nolint:errcheck
		payloads = append(payloads, p)
	}
	rows.Close()
	if len(payloads) != 2 {
		t.Fatalf("task messages %q", payloads)
	}
	for _, p := range payloads {
		var m struct {
			Kind          string `json:"kind"`
			IntegrationID int64  `json:"integration_id"`
			DeliveryID    int64  `json:"delivery_id"`
			Request       int64  `json:"request"`
		}
		dec := json.NewDecoder(strings.NewReader(p))
		if err := dec.Decode(&m); err != nil || m.Kind != "deliver" || m.IntegrationID == 0 || m.DeliveryID == 0 || m.Request != 1 {
			t.Fatalf("task %s: %+v %v", p, m, err)
		}
	}
	ds, err := s.FileDestinations(ctx, f.ID)
	if err != nil || len(ds) != 3 || ds[0].Type != "LOCAL" || ds[0].RemotePath != "ann/1_x.pdf" || ds[0].IntegrationID != nil {
		t.Fatalf("destinations %+v %v", ds, err)
	}

	// An attempt, then send-to: the attempt's outcome is stale.
	var idA int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM file_destinations WHERE integration_id = $1`, a.ID).Scan(&idA); err != nil {
		t.Fatal(err)
	}
	task, err := s.StartDelivery(ctx, idA, a.ID, 1, 1, time.Minute)
	if err != nil || task == nil || task.Attempt != 1 || task.Fields.OriginalFilename != "x.pdf" {
		t.Fatalf("start: %+v %v", task, err)
	}
	if err := s.SendFileTo(ctx, f.ID, "ann", a.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.FinishDelivery(ctx, docflow.DeliveryOutcome{DeliveryID: idA, FileID: f.ID, IntegrationID: a.ID, Request: 1,
		Status: docflow.DestinationDelivered, RemotePath: "/x.pdf", Log: "old", At: now}, nil); err != nil || ok {
		t.Fatalf("stale outcome recorded: %v %v", ok, err)
	}
	if task, err := s.StartDelivery(ctx, idA, a.ID, 1, 1, time.Minute); err != nil || task != nil {
		t.Fatalf("stale start: %+v %v", task, err)
	}
	task, err = s.StartDelivery(ctx, idA, a.ID, 2, 1, time.Minute)
	if err != nil || task == nil || task.Attempt != 1 {
		t.Fatalf("start of the new request: %+v %v", task, err)
	}

	// Two outcomes in one transaction.
	var idB int64
	if err := db.Pool.QueryRow(ctx, `SELECT id FROM file_destinations WHERE integration_id = $1`, b.ID).Scan(&idB); err != nil {
		t.Fatal(err)
	}
	next := now.Add(time.Minute)
	retry, _ := destinationTask(b.ID, idB, 1)
	retry.AvailableAt = next
	got, err := s.FinishDeliveries(ctx, []docflow.DeliveryFinish{
		{Outcome: docflow.DeliveryOutcome{DeliveryID: idA, FileID: f.ID, IntegrationID: a.ID, Request: 2,
			Status: docflow.DestinationDelivered, RemotePath: "/x.pdf", Log: "Delivered to A", At: now}},
		{Outcome: docflow.DeliveryOutcome{DeliveryID: idB, FileID: f.ID, IntegrationID: b.ID, Request: 1,
			Status: docflow.DestinationRetrying, Error: "503", NextAttemptAt: &next, Log: "Delivery to B failed", At: now}, Retry: &retry},
	})
	if err != nil || len(got) != 2 || !got[0] || !got[1] {
		t.Fatalf("finish: %v %v", got, err)
	}
	var providers []string
	if err := db.Pool.QueryRow(ctx, `SELECT storage_providers FROM files WHERE id = $1`, f.ID).Scan(&providers); err != nil ||
		len(providers) != 1 || providers[0] != "webdav" {
		t.Fatalf("providers %v %v", providers, err)
	}
	var due int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE topic = 'docflow.destinations' AND available_at > now() + interval '30 seconds'`).Scan(&due); err != nil || due != 1 {
		t.Fatalf("retry messages %d %v", due, err)
	}
	inB, err := integ.GetIntegration(ctx, "ann", b.ID)
	if err != nil || inB.LastError == nil || *inB.LastError != "503" || inB.Status.DeliveriesFailed != 1 {
		t.Fatalf("B's status %+v %v", inB, err)
	}
	inA, _ := integ.GetIntegration(ctx, "ann", a.ID)
	if inA.Status.DeliveriesOK != 1 || inA.LastError != nil || inA.LastUsedAt == nil {
		t.Fatalf("A's status %+v", inA)
	}

	// A deactivated integration announces itself and its deliveries can
	// be cancelled.
	if _, err := integ.UpdateIntegration(ctx, "ann", b.ID, true, func(in *docflow.Integration) error { in.IsActive = false; return nil }); err != nil {
		t.Fatal(err)
	}
	var changed string
	if err := db.Pool.QueryRow(ctx, `SELECT convert_from(payload, 'UTF8') FROM outbox WHERE topic = 'docflow.destinations'
		ORDER BY id DESC LIMIT 1`).Scan(&changed); err != nil || !strings.Contains(changed, `"kind" : "changed"`) {
		t.Fatalf("change message %q %v", changed, err)
	}
	if n, err := s.CancelDeliveries(ctx, b.ID, "the destination was deactivated"); err != nil || n != 1 {
		t.Fatalf("cancel: %d %v", n, err)
	}
}
