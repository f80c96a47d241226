package pipeline

import (
	"context"
	"fmt"
	"slices"

	"docflow"
	"docflow/storage/postgres"
	"docflow/streams"
)

// router consumes file.ingested: it picks the run's pipeline (explicit
// assignment, else routing rules, else the owner's default, else the system
// default), records the run's steps as queued copies of the pipeline's, and
// publishes the first step task, in one transaction.
type router struct{ e *Engine }

func (r *router) handle(d *streams.Delivery) {
	_, msg, err := streams.Decode[streams.FileIngested](d.Message.Value)
	if err != nil {
		d.Nack(err) // poison: dead-lettered
		return
	}
	r.e.wg.Add(1)
	go func() {
		defer r.e.wg.Done()
		err := r.e.withDB("route", func(ctx context.Context) error { return r.route(ctx, msg) })
		switch {
		case err == nil:
			d.Ack()
		case r.e.ctx.Err() != nil:
			// Stopping: leave it for redelivery.
		default:
			r.e.log.Error().Err(err).Str("run", msg.RunID).Msg("route run")
			d.Nack(streams.Poison(err))
		}
	}()
}

// choice is the pipeline picked for a run and why.
type choice struct {
	pipeline *docflow.Pipeline // nil: the built-in standard steps
	reason   string
}

func (r *router) route(ctx context.Context, msg streams.FileIngested) error {
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
	var out []streams.OutboxMessage
	if len(steps) == 0 {
		m, err := eventMessage(docflow.EventDocumentProcessed, f, st.RunID, map[string]any{"status": docflow.StatusCompleted}, now)
		if err != nil {
			return err
		}
		out = append(out, m)
	} else {
		m, err := taskMessage(streams.StepTask{RunID: st.RunID, FileID: f.ID, Position: 0, StepType: steps[0].StepType, Attempt: 1}, now)
		if err != nil {
			return err
		}
		out = append(out, m)
	}
	_, err = r.e.store.StartRun(ctx, st.RunID, f.ID, pid, steps, logMsg, out...)
	return err
}

// choose applies the routing order of decisions.md.
func (r *router) choose(ctx context.Context, msg streams.FileIngested, st *postgres.RoutingState) (choice, error) {
	f := st.File
	for _, id := range []*int64{msg.PipelineID, st.PipelineID, f.PipelineID} {
		if id == nil {
			continue
		}
		p, err := r.e.pipelines.FindPipelineByID(ctx, *id)
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			continue // deleted since it was assigned
		} else if err != nil {
			return choice{}, err
		}
		if p.IsActive {
			return choice{pipeline: p, reason: "assigned"}, nil
		}
	}
	rule, p, err := r.e.routing.Route(ctx, f.OwnerID, docflow.RoutingInputFor(f))
	if err != nil {
		return choice{}, err
	}
	if p != nil {
		return choice{pipeline: p, reason: fmt.Sprintf("routing rule %q", rule.Name)}, nil
	}
	p, err = r.e.pipelines.DefaultPipeline(ctx, f.OwnerID)
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
