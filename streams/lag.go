package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// Lag returns, per topic, how many messages the consumer group has not
// committed yet (the sum over partitions of end offset minus committed
// offset; a partition without a commit counts from its first offset). It
// feeds the queue statistics.
func Lag(ctx context.Context, brokers []string, group string, topics ...string) (map[string]int64, error) {
	if len(brokers) == 0 {
		return nil, errors.New("lag: no brokers")
	}
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	meta, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("lag %s: metadata: %w", group, err)
	}
	parts := map[string][]int{}
	var reqs = map[string][]kafka.OffsetRequest{}
	for _, t := range meta.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("lag %s: topic %s: %w", group, t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			parts[t.Name] = append(parts[t.Name], p.ID)
			reqs[t.Name] = append(reqs[t.Name], kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: reqs})
	if err != nil {
		return nil, fmt.Errorf("lag %s: list offsets: %w", group, err)
	}
	committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: parts})
	if err != nil {
		return nil, fmt.Errorf("lag %s: offset fetch: %w", group, err)
	}
	// A group that never committed is unknown to some brokers (kfake).
	if committed.Error != nil && !errors.Is(committed.Error, kafka.GroupIdNotFound) {
		return nil, fmt.Errorf("lag %s: offset fetch: %w", group, committed.Error)
	}
	lag := make(map[string]int64, len(topics))
	for _, t := range topics {
		done := map[int]int64{}
		for _, p := range committed.Topics[t] {
			done[p.Partition] = p.CommittedOffset
		}
		var sum int64
		for _, p := range offs.Topics[t] {
			if p.Error != nil {
				return nil, fmt.Errorf("lag %s: offsets of %s/%d: %w", group, t, p.Partition, p.Error)
			}
			from := p.FirstOffset
			if c, ok := done[p.Partition]; ok && c >= 0 {
				from = max(c, p.FirstOffset)
			}
			sum += max(p.LastOffset-from, 0)
		}
		lag[t] = sum
	}
	return lag, nil
}
