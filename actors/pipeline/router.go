package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"docflow"
	"docflow/actors"
	"docflow/internal/ttlcache"
	"docflow/streams"
)

// router consumes file.ingested: it picks the run's pipeline (explicit
// assignment, else routing rules, else the owner's default, else the system
// default), records the run's steps as queued copies of the pipeline's, and
// publishes the first step task, in one transaction.
//
// The consumer's fetch goroutine sends each delivery to a kind of
// recovered router actors ("router/0" … "router/511"), each
// routing one run at a time and acknowledging (or dead-lettering) its
// delivery itself.
type router struct {
	e      *Engine
	cache  *routeCache
	actors *actors.Pool[*routeTask, struct{}]
}

// routerActors is the number of router actors: as many as the router's
// consumer has deliveries in flight, so that the in-flight budget alone
// bounds the runs routed at once (no queue in front of the actors).
const routerActors = inFlightBudget

// routeTask is the message a router actor receives.
type routeTask struct {
	d   *streams.Delivery
	msg streams.FileIngested
}

func newRouter(e *Engine) (*router, error) {
	r := &router{e: e, cache: newRouteCache(e, e.cfg.RouteCacheTTL)}
	pool, err := actors.NewPool(e.cfg.Actors, actors.PoolConfig{Kind: "router", Size: routerActors, Log: e.log}, r.receive)
	if err != nil {
		return nil, fmt.Errorf("start pipeline engine: %w", err)
	}
	r.actors = pool
	return r, nil
}

// handle is the consumer's Handler: decode and send to a router actor. A
// closed kind (the engine stopping) leaves the delivery for redelivery.
func (r *router) handle(d *streams.Delivery) {
	_, msg, err := streams.Decode[streams.FileIngested](d.Message.Value)
	if err != nil {
		d.Nack(err) // poison: dead-lettered
		return
	}
	_ = r.actors.Submit(actors.Job[*routeTask, struct{}]{ID: msg.RunID, Msg: &routeTask{d: d, msg: msg}, Done: func(res actors.Result[struct{}]) {
		// receive resolves its delivery; a panic (a bug) dead-letters it.
		if res.Err != nil && !errors.Is(res.Err, actors.ErrPoolClosed) {
			r.e.log.Error().Err(res.Err).Str("run", msg.RunID).Msg("route run")
			d.Nack(streams.Poison(res.Err))
		}
	}})
}

// receive is what a router actor does with a delivery.
func (r *router) receive(_ context.Context, t *routeTask) (struct{}, error) {
	err := r.e.withDB("route", func(ctx context.Context) error { return r.route(ctx, t.msg) })
	switch {
	case err == nil:
		t.d.Ack()
	case r.e.ctx.Err() != nil:
		// Stopping: leave it for redelivery.
	default:
		r.e.log.Error().Err(err).Str("run", t.msg.RunID).Msg("route run")
		t.d.Nack(streams.Poison(err))
	}
	return struct{}{}, nil
}

// choice is the pipeline picked for a run and why.
type choice struct {
	pipeline *docflow.Pipeline // nil: the built-in standard steps
	reason   string
}

func (r *router) route(ctx context.Context, msg streams.FileIngested) error {
	return r.routeOnce(ctx, msg, false)
}

func (r *router) routeOnce(ctx context.Context, msg streams.FileIngested, retried bool) error {
	st, err := r.e.store.RunForRouting(ctx, msg.RunID)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		return nil // the file or run was deleted
	} else if err != nil {
		return err
	}
	if st.Status != docflow.RunPending || st.Routed {
		return nil // routed already (a redelivery)
	}
	f := st.File
	if f.TaskID != "" && f.TaskID != st.RunID {
		return r.e.store.SupersedeRun(ctx, st.RunID)
	}
	c, err := r.choose(ctx, msg, st)
	if err != nil {
		return err
	}
	known := r.e.cfg.Registry.KnownTypes()
	var steps []*docflow.PipelineStep
	var dropped []string
	name := "built-in standard steps"
	var pid *int64
	if c.pipeline != nil {
		name = fmt.Sprintf("%q", c.pipeline.Name)
		pid = &c.pipeline.ID
		for _, s := range c.pipeline.Steps {
			if !s.Enabled {
				continue
			}
			if !slices.Contains(known, s.StepType) {
				dropped = append(dropped, s.StepType)
				continue
			}
			steps = append(steps, s)
		}
	} else {
		for _, t := range docflow.StandardSteps {
			steps = append(steps, &docflow.PipelineStep{StepType: t, Label: docflow.StepCatalogue()[t].Label, Enabled: true})
		}
	}
	logMsg := fmt.Sprintf("Pipeline %s (%s), %d steps", name, c.reason, len(steps))
	if len(dropped) > 0 {
		logMsg += fmt.Sprintf("; unknown step types left out: %v", dropped)
	}
	now := r.e.now()
	var out []docflow.OutboxMessage
	if len(steps) == 0 {
		m, err := streams.DocumentProcessed(f, st.RunID, docflow.StatusCompleted, now)
		if err != nil {
			return err
		}
		out = append(out, m)
	} else {
		m, err := streams.StepTaskMessage(streams.StepTask{RunID: st.RunID, FileID: f.ID, Position: 0, StepType: steps[0].StepType, Attempt: 1}, now)
		if err != nil {
			return err
		}
		out = append(out, m)
	}
	w, err := r.e.store.StartRun(ctx, st.RunID, f.ID, pid, steps, logMsg, out...)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND && !retried {
		// The cached pipeline was deleted meanwhile: read again.
		r.cache.clear()
		return r.routeOnce(ctx, msg, true)
	}
	if err != nil {
		return err
	}
	r.e.direct.Send(r.e.ctx, out, w.OutboxIDs)
	return nil
}

// choose applies the routing order of decisions.md.
func (r *router) choose(ctx context.Context, msg streams.FileIngested, st *docflow.RoutingState) (choice, error) {
	f := st.File
	for _, id := range []*int64{msg.PipelineID, st.PipelineID, f.PipelineID} {
		if id == nil {
			continue
		}
		p, err := r.cache.pipeline(ctx, *id)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			continue // deleted since it was assigned
		} else if err != nil {
			return choice{}, err
		}
		if p.IsActive {
			return choice{pipeline: p, reason: "assigned"}, nil
		}
	}
	rules, err := r.cache.rules(ctx, f.OwnerID)
	if err != nil {
		return choice{}, err
	}
	rule, p, err := docflow.MatchRules(ctx, rules, docflow.RoutingInputFor(f), r.cache.pipeline)
	if err != nil {
		return choice{}, err
	}
	if p != nil {
		return choice{pipeline: p, reason: fmt.Sprintf("routing rule %q", rule.Name)}, nil
	}
	p, err = r.cache.defaultPipeline(ctx, f.OwnerID)
	if docflow.ErrorCode(err) == docflow.ENOTFOUND {
		return choice{reason: "no active default pipeline"}, nil
	} else if err != nil {
		return choice{}, err
	}
	reason := "system default"
	if p.OwnerID != nil {
		reason = "owner's default"
	}
	return choice{pipeline: p, reason: reason}, nil
}

// routeCache keeps pipelines, rules and defaults for a moment: a burst of
// uploads is routed without reading the same pipeline once per document.
// A change to a pipeline or rule applies to files routed after ttl (runs
// copy their pipeline's steps when routed, so a cached pipeline is never
// half-applied). Values and ENOTFOUND answers are kept, other errors not.
type routeCache struct {
	e         *Engine
	pipelines *ttlcache.Cache[int64, cached[*docflow.Pipeline]]
	ruleSets  *ttlcache.Cache[string, cached[[]*docflow.RoutingRule]]
	defaults  *ttlcache.Cache[string, cached[*docflow.Pipeline]]
}

type cached[T any] struct {
	v   T
	err error
}

// routeCacheSize bounds each of the route cache's maps.
const routeCacheSize = 10_000

func newRouteCache(e *Engine, ttl time.Duration) *routeCache {
	return &routeCache{e: e,
		pipelines: ttlcache.New[int64, cached[*docflow.Pipeline]](routeCacheSize, ttl, e.now),
		ruleSets:  ttlcache.New[string, cached[[]*docflow.RoutingRule]](routeCacheSize, ttl, e.now),
		defaults:  ttlcache.New[string, cached[*docflow.Pipeline]](routeCacheSize, ttl, e.now)}
}

func ownerKey(owner *string) string {
	if owner == nil {
		return "\x00system"
	}
	return *owner
}

// lookup returns k's fresh entry in m, else loads, caching values and
// ENOTFOUND.
func lookup[K comparable, T any](c *routeCache, m *ttlcache.Cache[K, cached[T]], k K, load func() (T, error)) (T, error) {
	if v, ok := m.Get(k); ok {
		return v.v, v.err
	}
	at := c.e.now()
	v, err := load()
	if err != nil && docflow.ErrorCode(err) != docflow.ENOTFOUND {
		return v, err
	}
	m.AddAt(k, cached[T]{v: v, err: err}, at)
	return v, err
}

// DropCaches forgets the pipelines, rules and defaults the router cached
// (a system reset replaced them). Call it once Start returned.
func (e *Engine) DropCaches() {
	if e.router != nil {
		e.router.cache.clear()
	}
}

func (c *routeCache) clear() {
	c.pipelines.Purge()
	c.ruleSets.Purge()
	c.defaults.Purge()
}

func (c *routeCache) pipeline(ctx context.Context, id int64) (*docflow.Pipeline, error) {
	return lookup(c, c.pipelines, id, func() (*docflow.Pipeline, error) { return c.e.pipelines.FindPipelineByID(ctx, id) })
}

func (c *routeCache) rules(ctx context.Context, owner *string) ([]*docflow.RoutingRule, error) {
	return lookup(c, c.ruleSets, ownerKey(owner), func() ([]*docflow.RoutingRule, error) { return c.e.routing.ActiveRules(ctx, owner) })
}

func (c *routeCache) defaultPipeline(ctx context.Context, owner *string) (*docflow.Pipeline, error) {
	return lookup(c, c.defaults, ownerKey(owner), func() (*docflow.Pipeline, error) { return c.e.pipelines.DefaultPipeline(ctx, owner) })
}
