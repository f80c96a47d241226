package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"docflow"
)

func newWebhookStore(t *testing.T) (*WebhookStore, *DB) {
	t.Helper()
	db, cleanup, err := OpenTestDB(context.Background(), "webhooks")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	c, err := NewCipher(strings.Repeat("k", 40))
	if err != nil {
		t.Fatal(err)
	}
	return NewWebhookStore(db, c, func(id int64, attempt int) (docflow.OutboxMessage, error) {
		return docflow.OutboxMessage{Topic: "docflow.deliveries", Key: "k", Payload: []byte(`{}`)}, nil
	}), db
}

// Fan-out records one delivery per (event, active subscribed webhook older
// than the event), once: a replayed event returns only deliveries not yet
// attempted. A recorded attempt is recorded once.
func TestWebhookFanoutIdempotent(t *testing.T) {
	t.Parallel()
	s, _ := newWebhookStore(t)
	ctx := context.Background()
	mk := func(active bool, events ...string) *docflow.Webhook {
		w := &docflow.Webhook{URL: "https://example.com/h", Secret: "sec", Events: events, IsActive: active}
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	a := mk(true, docflow.EventDocumentUploaded)
	b := mk(true, docflow.EventDocumentUploaded, docflow.EventDocumentFailed)
	mk(false, docflow.EventDocumentUploaded)
	mk(true, docflow.EventDocumentFailed)
	ev := docflow.Event{ID: "evt_1", Name: docflow.EventDocumentUploaded, Timestamp: time.Now().Add(time.Second),
		Data: map[string]any{"file_id": float64(1)}}

	ds, err := s.Fanout(ctx, ev)
	if err != nil || len(ds) != 2 || ds[0].Subscriber.ID != a.ID || ds[1].Subscriber.ID != b.ID {
		t.Fatalf("fanout: %+v %v", ds, err)
	}
	again, err := s.Fanout(ctx, ev)
	if err != nil || len(again) != 2 || again[0].ID != ds[0].ID {
		t.Fatalf("replayed fanout: %+v %v", again, err)
	}
	at := docflow.DeliveryAttempt{DeliveryID: ds[0].ID, Attempt: 1, StatusCode: 200, At: time.Now(), Status: docflow.DeliveryDelivered}
	if ok, err := s.RecordAttempt(ctx, ds[0].Subscriber, at, nil); !ok || err != nil {
		t.Fatalf("record: %v %v", ok, err)
	}
	if ok, err := s.RecordAttempt(ctx, ds[0].Subscriber, at, nil); ok || err != nil {
		t.Fatalf("record twice: %v %v", ok, err)
	}
	if again, _ := s.Fanout(ctx, ev); len(again) != 1 || again[0].ID != ds[1].ID {
		t.Fatalf("after one attempt: %+v", again)
	}
	// A first attempt postponed is left to the message that brings it
	// back: the event replayed before it is due returns nothing, after
	// it the delivery.
	later := docflow.OutboxMessage{Topic: "docflow.deliveries.retry.1m", Key: "k", Payload: []byte(`{}`)}
	if err := s.Postpone(ctx, ds[1].ID, time.Now().Add(time.Hour), later); err != nil {
		t.Fatal(err)
	}
	if again, err := s.Fanout(ctx, ev); err != nil || len(again) != 0 {
		t.Fatalf("replayed while postponed: %+v %v", again, err)
	}
	if err := s.Postpone(ctx, ds[1].ID, time.Now().Add(-time.Second), later); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.Fanout(ctx, ev); len(again) != 1 || again[0].ID != ds[1].ID {
		t.Fatalf("replayed once the postponement is due: %+v", again)
	}
	d, err := s.Delivery(ctx, ds[0].ID)
	if err != nil || d.Status != docflow.DeliveryDelivered || d.Attempts != 1 || d.Event.ID != "evt_1" || d.Event.Data["file_id"] != float64(1) {
		t.Fatalf("delivery %+v %v", d, err)
	}
	tg, err := s.Target(ctx, ds[0].Subscriber)
	if err != nil || !tg.Found || tg.Secret != "sec" {
		t.Fatalf("target %+v %v", tg, err)
	}

	// A webhook does not receive events older than itself.
	old := docflow.Event{ID: "evt_old", Name: docflow.EventDocumentUploaded, Timestamp: time.Now().Add(-time.Hour)}
	if ds, _ := s.Fanout(ctx, old); len(ds) != 0 {
		t.Errorf("an event older than the webhooks fanned out to %d", len(ds))
	}

	if err := s.DeleteWebhook(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if tg, err := s.Target(ctx, ds[1].Subscriber); err != nil || tg.Found {
		t.Errorf("target of a deleted webhook: %+v %v", tg, err)
	}
	if err := s.DeleteWebhook(ctx, b.ID); docflow.ErrorCode(err) != docflow.ENOTFOUND {
		t.Errorf("delete twice: %v", err)
	}
}
