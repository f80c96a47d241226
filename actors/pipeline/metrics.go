package pipeline

import (
	"context"
	"time"

	"docflow"
)

// runFunc runs one step attempt and reports its result.
type runFunc func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error)

// stepMiddleware wraps the running of a step attempt.
type stepMiddleware func(next runFunc) runFunc

// withMetrics records one step metric per attempt: step type, status
// (completed, skipped or failed), duration, attempt, bytes and error class.
// It wraps the timed run (actors.RunTimed), so attempts that time out or
// panic are counted too.
func withMetrics(rec docflow.Recorder, now func() time.Time) stepMiddleware {
	return func(next runFunc) runFunc {
		return func(ctx context.Context, in *docflow.StepInput) (*docflow.StepResult, error) {
			start := now()
			res, err := next(ctx, in)
			m := docflow.Metric{Kind: docflow.MetricStep, Time: start, RunID: in.RunID, StepType: in.StepType,
				Attempt: in.Attempt, Duration: now().Sub(start)}
			if in.File != nil {
				m.FileID = in.File.ID
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
