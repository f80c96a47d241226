package streams

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/segmentio/kafka-go"
)

// PartitionLag is how far a consumer group is behind on one partition.
type PartitionLag struct {
	Topic     string
	Partition int
	// Group is the consumer group the lag is of.
	Group string
	// Lag is the partition's last offset minus the group's committed
	// offset, which counts from the partition's first offset when the
	// group has committed nothing there or its commit points before the
	// first offset still kept (retention deleted what it had not read).
	Lag int64
}

// PartitionLags returns the lag of each partition of the topics in groups
// (topic → the consumer group that reads it), sorted by topic and
// partition. A topic that does not exist yet, or a partition whose
// offsets the broker cannot give, is left out: the lag of what exists is
// still worth reporting. A group that never committed lags by everything
// kept. It returns an error when the brokers cannot be asked at all.
func PartitionLags(ctx context.Context, brokers []string, groups map[string]string) ([]PartitionLag, error) {
	if len(brokers) == 0 {
		return nil, errors.New("consumer lags: no brokers")
	}
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
	var out []PartitionLag
	for topic, ps := range parts {
		group := groups[topic]
		committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: ps}})
		if err != nil {
			return nil, fmt.Errorf("consumer lags: offset fetch %s: %w", group, err)
		}
		// A group that never committed is unknown to some brokers (kfake).
		if committed.Error != nil && !errors.Is(committed.Error, kafka.GroupIdNotFound) {
			return nil, fmt.Errorf("consumer lags: offset fetch %s: %w", group, committed.Error)
		}
		done := map[int]int64{}
		for _, p := range committed.Topics[topic] {
			done[p.Partition] = p.CommittedOffset
		}
		for _, po := range offs.Topics[topic] {
			if po.Error != nil {
				continue
			}
			from := po.FirstOffset
			if c, ok := done[po.Partition]; ok && c >= 0 {
				from = max(c, po.FirstOffset)
			}
			out = append(out, PartitionLag{Topic: topic, Partition: po.Partition, Group: group, Lag: max(po.LastOffset-from, 0)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// ConsumerLags sums PartitionLags per topic.
func ConsumerLags(ctx context.Context, brokers []string, groups map[string]string) (map[string]int64, error) {
	parts, err := PartitionLags(ctx, brokers, groups)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, p := range parts {
		out[p.Topic] += p.Lag
	}
	return out, nil
}
