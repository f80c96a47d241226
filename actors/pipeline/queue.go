package pipeline

import (
	"context"
	"fmt"
	"sort"
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
	parts, err := partitionLags(ctx, i.Brokers, groups)
	if err != nil {
		return nil, err
	}
	out := make([]docflow.Metric, 0, len(parts))
	for _, p := range parts {
		out = append(out, docflow.Metric{Kind: docflow.MetricLag, Topic: p.topic, Partition: p.partition, Lag: p.lag, Worker: groups[p.topic]})
	}
	return out, nil
}

// ConsumerLags returns, for each topic → group, the sum over partitions of
// the last offset minus the group's committed offset (from the first
// offset when the group has committed nothing).
func ConsumerLags(ctx context.Context, brokers []string, groups map[string]string) (map[string]int64, error) {
	parts, err := partitionLags(ctx, brokers, groups)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, p := range parts {
		out[p.topic] += p.lag
	}
	return out, nil
}

type partLag struct {
	topic     string
	partition int
	lag       int64
}

// partitionLags returns each partition's lag (every partition of a topic
// that exists, 0 when caught up).
func partitionLags(ctx context.Context, brokers []string, groups map[string]string) ([]partLag, error) {
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
	var out []partLag
	for topic, ps := range parts {
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
			out = append(out, partLag{topic: topic, partition: po.Partition, lag: max(po.LastOffset-from, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].topic != out[j].topic {
			return out[i].topic < out[j].topic
		}
		return out[i].partition < out[j].partition
	})
	return out, nil
}
