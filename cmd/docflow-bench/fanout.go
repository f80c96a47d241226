package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"docflow"
	"docflow/actors/delivery"
	"docflow/integrations/webhook"
	"docflow/storage/postgres"
	"docflow/streams"
)

// fanoutHooks is how many webhooks receive every event.
const fanoutHooks = 10

// benchFanout measures event delivery: document events fanned out to 10
// webhooks on a local receiver, through the outbox, the broker, the
// delivery service and its PostgreSQL log, all in this process. The
// baseline is the receiver's raw request rate from a client like the
// webhook sender's (80 concurrent requests), in the same run. Then a
// burst (deliveries/s), a paced 2,000 deliveries/s (p99 from the event's
// commit to its delivery), and the burst again with one of the 10
// receivers dead (the live ones' deliveries/s; Go heap and RSS beside the
// burst without it).
func benchFanout(ctx context.Context, r *Report, o *options) error {
	events := 10000
	paced := 10 * time.Second
	if o.quick {
		events, paced = 2000, 5*time.Second
	}
	rc, err := newFanoutReceiver()
	if err != nil {
		return err
	}
	defer rc.close()
	base := fanoutBaseline(ctx, rc, 4*events)
	r.Add(Row{Section: "fanout", Name: "baseline: raw POSTs to the local receiver, 80 at once", Value: base, Unit: "req/s", Target: "baseline", Pass: true})

	b, err := newFanoutBench(ctx)
	if err != nil {
		return err
	}
	defer b.close()

	// The burst, all receivers live.
	burst, err := b.run(ctx, rc, events, 0, 0)
	if err != nil {
		return err
	}
	r.Add(Row{Section: "fanout", Name: fmt.Sprintf("burst: %d events x %d webhooks", events, fanoutHooks), Value: burst.perSec,
		Unit: "deliv/s", Baseline: base, Target: ">= 2000 deliv/s", Pass: burst.perSec >= 2000})

	// Paced at 2,000 deliveries/s.
	rate := 2000 / fanoutHooks
	pc, err := b.run(ctx, rc, rate*int(paced/time.Second), rate, 0)
	if err != nil {
		return err
	}
	r.AtMost("fanout", "p99 event commit to delivery at 2,000 deliv/s", pc.p99.Seconds()*1000, "ms", 500)

	// The burst again, one receiver dead.
	dead, err := b.run(ctx, rc, events, 0, 1)
	if err != nil {
		return err
	}
	r.AtLeast("fanout", fmt.Sprintf("burst, 1 of %d receivers dead: the live ones", fanoutHooks), dead.perSec, "deliv/s", 2000)
	r.RatioAtMost("fanout", "peak Go heap, 1 receiver dead (baseline: none dead)", dead.heap, burst.heap, "MiB", 2)
	r.RatioAtMost("fanout", "peak RSS, 1 receiver dead (baseline: none dead)", dead.rss, burst.rss, "MiB", 2)
	return nil
}

// fanoutBaseline POSTs n small bodies to the receiver, 80 at once, and
// returns the requests per second.
func fanoutBaseline(ctx context.Context, rc *fanoutReceiver, n int) float64 {
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256}}
	body := bytes.Repeat([]byte("x"), 200)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/base/%d", rc.url, w), bytes.NewReader(body))
				req.Header.Set("webhook-id", fmt.Sprint(i))
				if resp, err := client.Do(req); err == nil {
					io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained for reuse
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	perSec := float64(n) / time.Since(start).Seconds()
	rc.reset()
	return perSec
}

// fanoutBench is the delivery stack: a throwaway database, the embedded
// broker, the outbox relay and the delivery service.
type fanoutBench struct {
	db      *postgres.DB
	store   *postgres.WebhookStore
	outbox  *postgres.Outbox
	closers []func()
	hooks   []*docflow.Webhook
}

func newFanoutBench(ctx context.Context) (*fanoutBench, error) {
	log := zerolog.New(io.Discard)
	b := &fanoutBench{}
	db, cleanup, err := postgres.OpenTestDB(ctx, "benchfanout")
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, cleanup)
	b.db, b.outbox = db, postgres.NewOutbox(db)
	c, err := postgres.NewCipher(strings.Repeat("s", 40))
	if err != nil {
		return nil, err
	}
	vars := map[string]string{"WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
	settings, err := postgres.NewSettingsStore(ctx, db, c, func(k string) string { return vars[k] }, log)
	if err != nil {
		return nil, err
	}
	b.store = postgres.NewWebhookStore(db, c, delivery.AttemptMessage)
	broker := streams.NewBroker(streams.BrokerConfig{Log: log})
	if err := broker.Start(); err != nil {
		return nil, err
	}
	b.closers = append(b.closers, broker.Close)
	brokers := broker.Addrs()
	if err := streams.EnsureTopics(ctx, brokers, []kafka.TopicConfig{
		{Topic: streams.TopicEvents, NumPartitions: streams.DefaultPartitions, ReplicationFactor: 1},
		{Topic: streams.TopicDLQ, NumPartitions: 1, ReplicationFactor: 1},
	}); err != nil {
		return nil, err
	}
	producer, err := streams.NewProducer(streams.ProducerConfig{Brokers: brokers})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { producer.Close() })
	relay, err := streams.NewRelay(streams.RelayConfig{Store: b.outbox, Publisher: producer, Log: log})
	if err != nil {
		return nil, err
	}
	relay.Start()
	b.closers = append(b.closers, relay.Close)
	engine, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		return nil, err
	}
	svc, err := delivery.New(delivery.Config{Actors: engine, Brokers: brokers, Store: b.store, Settings: settings,
		Senders:   map[string]delivery.Sender{docflow.SubscriberWebhook: webhook.NewSender(settings)},
		Publisher: producer, Log: log, RetryDelays: []time.Duration{time.Minute}, Timeout: 5 * time.Second})
	if err != nil {
		return nil, err
	}
	if err := svc.Start(ctx); err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		svc.Close(cctx) //nolint:errcheck // the bench ends
	})
	return b, nil
}

func (b *fanoutBench) close() {
	for _, c := range slices.Backward(b.closers) {
		c()
	}
}

type fanoutRun struct {
	perSec    float64       // live deliveries per second
	p99       time.Duration // event commit to delivery
	heap, rss float64       // peak, MiB
}

// run subscribes 10 fresh webhooks (dead of them never answering), commits
// events document events (perSec of them a second, or all at once when
// 0) and waits for every live delivery.
func (b *fanoutBench) run(ctx context.Context, rc *fanoutReceiver, events, perSec, dead int) (fanoutRun, error) {
	var out fanoutRun
	for _, w := range b.hooks {
		if err := b.store.DeleteWebhook(ctx, w.ID); err != nil {
			return out, err
		}
	}
	b.hooks = nil
	rc.reset()
	for i := range fanoutHooks {
		path := "/hook/"
		if i < dead {
			path = "/dead/"
		}
		w := &docflow.Webhook{URL: fmt.Sprintf("%s%s%d", rc.url, path, i), Events: []string{docflow.EventDocumentUploaded}, IsActive: true}
		if err := b.store.CreateWebhook(ctx, w); err != nil {
			return out, err
		}
		b.hooks = append(b.hooks, w)
	}
	runtime.GC()
	var peakHeap, peakRSS atomic.Int64
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		var ms runtime.MemStats
		for sctx.Err() == nil {
			runtime.ReadMemStats(&ms)
			if h := int64(ms.HeapInuse); h > peakHeap.Load() {
				peakHeap.Store(h)
			}
			if r := rss(); r > peakRSS.Load() {
				peakRSS.Store(r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	committed := make(map[string]time.Time, events)
	owner, title := "bench", "Invoice"
	chunk := 500
	tick := time.Duration(0)
	if perSec > 0 {
		chunk = max(perSec/50, 1) // 50 commits a second
		tick = time.Second * time.Duration(chunk) / time.Duration(perSec)
	}
	start := time.Now()
	for lo := 0; lo < events; lo += chunk {
		if tick > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(lo/chunk) * tick)))
		}
		msgs := make([]docflow.OutboxMessage, 0, chunk)
		ids := make([]string, 0, chunk)
		for i := lo; i < min(lo+chunk, events); i++ {
			f := &docflow.File{ID: int64(i + 1), OriginalFilename: "scan.pdf", Status: "pending", OwnerID: &owner, DocumentTitle: &title}
			m, err := streams.DocumentUploaded(f, time.Now())
			if err != nil {
				return out, err
			}
			_, ev, err := streams.Decode[streams.Event](m.Payload)
			if err != nil {
				return out, err
			}
			msgs, ids = append(msgs, m), append(ids, ev.ID)
		}
		if err := b.outbox.Enqueue(ctx, msgs...); err != nil {
			return out, err
		}
		now := time.Now()
		for _, id := range ids {
			committed[id] = now
		}
	}
	want := events * (fanoutHooks - dead)
	deadline := time.Now().Add(5 * time.Minute)
	for rc.delivered() < want {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return out, fmt.Errorf("fanout: %d of %d deliveries after 5 min", rc.delivered(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	var last time.Time
	lat := make([]time.Duration, 0, want)
	for k, at := range rc.arrivals() {
		if at.After(last) {
			last = at
		}
		if c, ok := committed[k[strings.IndexByte(k, ' ')+1:]]; ok {
			lat = append(lat, at.Sub(c))
		}
	}
	slices.Sort(lat)
	out.perSec = float64(want) / last.Sub(start).Seconds()
	if len(lat) > 0 {
		out.p99 = lat[len(lat)*99/100]
	}
	out.heap, out.rss = float64(peakHeap.Load())/(1<<20), float64(peakRSS.Load())/(1<<20)
	return out, nil
}
