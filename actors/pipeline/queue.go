package pipeline

import (
	"context"
	"time"

	"docflow"
	"docflow/streams"
)

// Inspector answers the queue endpoints: consumer lag per topic from the
// broker, workers and files from Postgres. It needs no running engine, so
// `docflow api` can serve it.
type Inspector struct {
	Brokers []string
	Store   QueueStore
	// StepTypes whose topics are reported (default: the standard steps).
	StepTypes []string
	// WorkerAlive is how recent a heartbeat counts as online (default 10 s).
	WorkerAlive time.Duration
}

var _ docflow.QueueService = (*Inspector)(nil)

// NewInspector returns an Inspector.
func NewInspector(brokers []string, store QueueStore, stepTypes []string) *Inspector {
	if store == nil {
		panic("pipeline: NewInspector needs a QueueStore")
	}
	return &Inspector{Brokers: brokers, Store: store, StepTypes: stepTypes}
}

// QueueStats implements docflow.QueueService. Without a reachable broker the
// queues are reported empty and the database part still answers.
func (i *Inspector) QueueStats(ctx context.Context) (*docflow.QueueStats, error) {
	alive := i.WorkerAlive
	if alive <= 0 {
		alive = 10 * time.Second
	}
	q, err := i.Store.QueueSummary(ctx, alive)
	if err != nil {
		return nil, err
	}
	if len(i.Brokers) > 0 {
		lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if lags, err := i.Lags(lctx); err == nil {
			q.Queues = lags
		}
	}
	for _, n := range q.Queues {
		q.TotalQueued += n
	}
	return q, nil
}

// PendingCount implements docflow.QueueService.
func (i *Inspector) PendingCount(ctx context.Context) (int, error) { return i.Store.PendingCount(ctx) }

// Lags returns the consumer lag of the router topic and each step topic:
// messages produced but not yet committed by the topic's group.
func (i *Inspector) Lags(ctx context.Context) (map[string]int64, error) {
	types := i.StepTypes
	if types == nil {
		types = docflow.StandardSteps
	}
	groups := map[string]string{streams.TopicFilesIngested: RouterGroup}
	for _, t := range types {
		groups[streams.StepTopic(t)] = StepGroup(t)
	}
	return streams.ConsumerLags(ctx, i.Brokers, groups)
}

// PartitionLags samples the consumer lag of the router topic and each
// step topic per partition, as MetricLag rows (Worker is the group).
func (i *Inspector) PartitionLags(ctx context.Context) ([]docflow.Metric, error) {
	types := i.StepTypes
	if types == nil {
		types = docflow.StandardSteps
	}
	groups := map[string]string{streams.TopicFilesIngested: RouterGroup}
	for _, t := range types {
		groups[streams.StepTopic(t)] = StepGroup(t)
	}
	parts, err := streams.PartitionLags(ctx, i.Brokers, groups)
	if err != nil {
		return nil, err
	}
	out := make([]docflow.Metric, 0, len(parts))
	for _, p := range parts {
		out = append(out, docflow.Metric{Kind: docflow.MetricLag, Topic: p.Topic, Partition: p.Partition, Lag: p.Lag, Worker: p.Group})
	}
	return out, nil
}
