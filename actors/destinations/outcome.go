package destinations

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"docflow"
	"docflow/actors"
)

// deliver makes one delivery with the client k, on the client's actor:
// the blob is streamed from the blob store under the name the
// integration's filename_template gives it.
func (s *Service) deliver(ctx context.Context, k docflow.DestinationClient, in *docflow.Integration, task *docflow.DeliveryTask, res *callResult) error {
	start := time.Now()
	rc, size, err := s.cfg.Blobs.Open(ctx, task.Blob)
	if err != nil {
		if docflow.ErrorCode(err) == docflow.ENOTFOUND {
			return docflow.DestFail(docflow.DestInvalid, "the document's file is missing", err)
		}
		return docflow.DestFail(docflow.DestUnavailable, "the document's file could not be read", err)
	}
	defer rc.Close()
	template, _ := in.Config["filename_template"].(string)
	name := docflow.RenderFilename(template, task.Fields)
	if n, ok := k.(docflow.DestinationNamer); ok {
		name = n.DestinationName(name)
	}
	doc := task.Doc
	doc.Name, doc.Size = name, size
	res.name, res.size = name, size
	remote, err := k.Deliver(ctx, doc, rc)
	res.remote = remote
	if s.cfg.Metrics != nil {
		var sent int64
		if err == nil {
			sent = size
		}
		s.cfg.Metrics.Record(docflow.IntegrationMetric(strings.ToLower(in.IntegrationType), docflow.DirectionOut,
			fmt.Sprintf("%s:%d", strings.ToLower(in.IntegrationType), in.ID), start, sent, err))
	}
	if err != nil && ctx.Err() == nil && docflow.DestinationFailureOf(err) == docflow.DestUnavailable {
		// The connection may be what failed: the client reconnects.
		return actors.Disconnected(err)
	}
	return err
}

// finish turns a call's end into the delivery's outcome and records it
// (with the retry's task when another attempt is due) on a goroutine,
// which acknowledges the task once recorded. An attempt abandoned because
// the partition was lost or the service is stopping records nothing: the
// next owner makes it again.
func (a *destinationActor) finish(j *job, res *callResult, err error) {
	now := a.s.cfg.Now()
	task := j.task
	cause := error(nil)
	if j.ctx != nil && j.ctx.Err() != nil {
		cause = context.Cause(j.ctx)
	}
	a.unhold(j)
	if err != nil && (errors.Is(cause, errLost) || errors.Is(cause, context.Canceled) && a.s.ctx.Err() != nil) {
		if errors.Is(cause, errLost) {
			// The attempt was cut short: the next owner makes it again
			// without waiting for the claim's lease.
			a.releaseClaims(task)
		}
		j.d.Release()
		return
	}
	name, typ := fmt.Sprintf("integration %d", a.id), ""
	if a.in != nil {
		name, typ = a.in.Name, a.in.IntegrationType
	}
	what := fmt.Sprintf("%s (%s)", name, typ)
	o := docflow.DeliveryOutcome{DeliveryID: task.DeliveryID, FileID: task.FileID, IntegrationID: task.IntegrationID,
		Request: task.Request, Attempt: task.Attempt, Claim: task.Claim, At: now}
	var retry *docflow.OutboxMessage
	switch {
	case err == nil:
		o.Status, o.RemotePath = docflow.DestinationDelivered, res.remote
		o.Log = fmt.Sprintf("Delivered to %s as %s", what, res.remote)
	case errors.Is(cause, errGone) || errors.Is(cause, errInactive):
		o.Status, o.Error = docflow.DestinationCancelled, cause.Error()
		o.Log = fmt.Sprintf("Delivery to %s cancelled: %s", what, cause.Error())
	default:
		if errors.Is(err, actors.ErrNotConnected) {
			err = a.notConnected()
		}
		class := docflow.DestinationFailureOf(err)
		reason := docflow.DestinationReason(err)
		o.Error = reason
		delay, ok := a.s.retryDelay(task.Attempt, err)
		if final := class == docflow.DestInvalid || class == docflow.DestHostKey; final || !ok {
			o.Status = docflow.DestinationFailed
			o.Log = fmt.Sprintf("Delivery to %s failed: %s", what, reason)
			if !final && task.Attempt > 1 {
				o.Log = fmt.Sprintf("Delivery to %s failed after %d attempts: %s", what, task.Attempt, reason)
			}
			break
		}
		next := now.Add(delay)
		o.Status, o.NextAttemptAt = docflow.DestinationRetrying, &next
		o.Log = fmt.Sprintf("Delivery to %s failed (attempt %d): %s; next attempt in %s", what, task.Attempt, reason,
			delay.Round(time.Second))
		m, merr := taskMessage(task.IntegrationID, task.DeliveryID, task.Request, task.Attempt+1)
		if merr != nil {
			a.log.Error().Err(merr).Msg("retry message")
			break
		}
		m.AvailableAt = next
		retry = &m
		if class == docflow.DestRateLimited {
			// The far side asked this integration to slow down: its queue
			// waits, up to half a minute (longer waits are the retry's).
			var de *docflow.DestinationError
			if errors.As(err, &de) && de.RetryAfter > 0 {
				a.paused = now.Add(min(de.RetryAfter, 30*time.Second))
			}
		}
	}
	ev := a.log.Info()
	if o.Status != docflow.DestinationDelivered {
		ev = a.log.Warn().AnErr("cause", err)
	}
	ev.Int64("file", task.FileID).Int64("delivery", task.DeliveryID).Int("attempt", task.Attempt).
		Str("status", o.Status).Str("name", res.name).Msg(o.Log)
	s := a.s
	s.goDo(func() {
		ok := s.retry("record delivery", func(ctx context.Context) error {
			_, err := s.finishes.Do(ctx, docflow.DeliveryFinish{Outcome: o, Retry: retry})
			return err
		})
		if !ok {
			j.d.Release()
			return
		}
		j.d.Ack()
	})
}

// notConnected is the failure of a call made while the client could not
// connect: its connect error.
func (a *destinationActor) notConnected() error {
	if a.connErr != nil {
		return a.connErr
	}
	return docflow.DestFail(docflow.DestUnavailable, "not connected to the destination", actors.ErrNotConnected)
}

// retryDelay is the wait after failed attempt n (jittered), and false
// after the last. A rate-limited failure waits at least what the far side
// asked.
func (s *Service) retryDelay(n int, err error) (time.Duration, bool) {
	if n < 1 || n > len(s.cfg.RetryDelays) {
		return 0, false
	}
	d := s.cfg.RetryDelays[n-1]
	d = time.Duration(float64(d) * (1 + s.cfg.Jitter*(2*rand.Float64()-1)))
	var de *docflow.DestinationError
	if errors.As(err, &de) && de.Class == docflow.DestRateLimited && de.RetryAfter > d {
		d = de.RetryAfter
	}
	return d, true
}
