package pipeline

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

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
	return ConsumerLags(ctx, i.Brokers, groups)
}

// ConsumerLags returns, for each topic → group, the sum over partitions of
// the last offset minus the group's committed offset (from the first
// offset when the group has committed nothing).
func ConsumerLags(ctx context.Context, brokers []string, groups map[string]string) (map[string]int64, error) {
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 5 * time.Second}
	topics := make([]string, 0, len(groups))
	for t := range groups {
		topics = append(topics, t)
	}
	meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("consumer lags: metadata: %w", err)
	}
	parts := map[string][]int{}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, t := range meta.Topics {
		if t.Error != nil {
			continue
		}
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
			req.Topics[t.Name] = append(req.Topics[t.Name], kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	offs, err := cl.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("consumer lags: list offsets: %w", err)
	}
	out := map[string]int64{}
	for topic, ps := range parts {
		out[topic] = 0
		committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: groups[topic], Topics: map[string][]int{topic: ps}})
		if err != nil {
			return nil, fmt.Errorf("consumer lags: offset fetch %s: %w", groups[topic], err)
		}
		cm := map[int]int64{}
		for _, p := range committed.Topics[topic] {
			cm[p.Partition] = p.CommittedOffset
		}
		for _, po := range offs.Topics[topic] {
			if po.Error != nil {
				continue
			}
			from := po.FirstOffset
			if c, ok := cm[po.Partition]; ok && c >= 0 {
				from = c
			}
			if po.LastOffset > from {
				out[topic] += po.LastOffset - from
			}
		}
	}
	return out, nil
}
