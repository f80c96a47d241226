package pipeline

import (
	"context"
	"strconv"
	"time"

	"docflow"
)

// runFunc runs one step attempt and reports its result.
type runFunc func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error)

// stepMiddleware wraps the running of a step attempt.
type stepMiddleware func(next runFunc) runFunc

// stepMeta is what the step metric needs from the delivery: how long the
// task waited in its queue (from its enqueueing to its claim) and the worker.
type stepMeta struct {
	queueWait time.Duration
	worker    string
}

type stepMetaKey struct{}

func withStepMeta(ctx context.Context, m stepMeta) context.Context {
	return context.WithValue(ctx, stepMetaKey{}, m)
}

// pipelineOf names the pipeline assigned to f by its id ("" for the
// built-in standard steps).
func pipelineOf(f *docflow.File) string {
	if f.PipelineID != nil {
		return strconv.FormatInt(*f.PipelineID, 10)
	}
	return ""
}

// withMetrics records one step metric per attempt: step type, pipeline,
// worker, status (completed, skipped or failed), duration, queue wait,
// attempt, bytes in (the file's size) and out, and error class.
// It wraps the timed run (actors.RunTimed), so attempts that time out or
// panic are counted too.
func withMetrics(rec docflow.Recorder, now func() time.Time) stepMiddleware {
	return func(next runFunc) runFunc {
		return func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
			start := now()
			res, err := next(ctx, in)
			m := docflow.Metric{Kind: docflow.MetricStep, Time: start, RunID: in.RunID, StepType: in.StepType,
				Attempt: in.Attempt, Duration: now().Sub(start)}
			if meta, ok := ctx.Value(stepMetaKey{}).(stepMeta); ok {
				m.QueueWait, m.Worker = max(meta.queueWait, 0), meta.worker
			}
			if in.File != nil {
				m.FileID = in.File.ID
				m.BytesIn = in.File.FileSize
				m.Pipeline = pipelineOf(in.File)
				if in.File.OwnerID != nil {
					m.OwnerID = *in.File.OwnerID
				}
			}
			switch {
			case err != nil:
				m.Status, m.ErrorClass = docflow.StepFailed, errorClass(err)
			case res != nil && res.Skipped:
				m.Status = docflow.StepSkipped
			default:
				m.Status = docflow.StepSucceeded
			}
			if res != nil {
				m.Bytes = res.Bytes
			}
			rec.Record(m)
			return res, err
		}
	}
}
