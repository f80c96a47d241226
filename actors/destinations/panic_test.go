package destinations

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"docflow"
)

// panickyStore panics on its first load of an integration and its first
// start of a delivery.
type panickyStore struct {
	Store
	loads, starts atomic.Int32
}

func (p *panickyStore) DestinationIntegration(ctx context.Context, id int64) (*docflow.Integration, int64, error) {
	if p.loads.Add(1) == 1 {
		panic("store: first load")
	}
	return p.Store.DestinationIntegration(ctx, id)
}

func (p *panickyStore) StartDelivery(ctx context.Context, id, integrationID, request int64, attempt int, lease time.Duration) (*docflow.DeliveryTask, error) {
	if p.starts.Add(1) == 1 {
		panic("store: first start")
	}
	return p.Store.StartDelivery(ctx, id, integrationID, request, attempt, lease)
}

// A panic in the store while an integration loads or a delivery starts is
// recovered as a failed try and tried again: the actor is answered, and
// the document is delivered, once.
func TestStorePanicsAreNotWaitedFor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := newDAV(t)
	ps := &panickyStore{Store: e.store}
	e.start(func(c *Config) { c.Store = ps })
	share := e.davIntegration(d, "Share", "/in", "p", nil)
	f := e.file("scan.pdf", "", []byte("%PDF-1.4 panics"))
	e.enqueue(f, "run-1")
	ds := e.waitStatus(f, share, docflow.DestinationDelivered, time.Minute)
	if ps.loads.Load() < 2 || ps.starts.Load() < 2 {
		t.Fatalf("loads %d, starts %d: the panics did not happen", ps.loads.Load(), ps.starts.Load())
	}
	if ds.Attempts != 1 || d.puts.Load() != 1 {
		t.Fatalf("attempts %d, PUTs %d", ds.Attempts, d.puts.Load())
	}
}
