package streams

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"docflow"

	"github.com/segmentio/kafka-go"
)

// Topic names. Every message is keyed by its file id (decimal) so that one
// file's messages land on one partition and stay in order.
const (
	TopicFilesIngested = "docflow.files.ingested"
	TopicDLQ           = "docflow.dlq"
	TopicEvents        = "docflow.events"
	// TopicDestinations carries the deliveries to storage destinations,
	// keyed by integration id (actors/destinations).
	TopicDestinations = "docflow.destinations"

	stepTopicPrefix  = "docflow.steps."
	retryTopicPrefix = "docflow.retry."
)

// DefaultPartitions is the partition count of every topic unless configured:
// the upper bound on the number of workers that share one step's load.
const DefaultPartitions = 12

// StepTopic names the task topic of one step type.
func StepTopic(stepType string) string { return stepTopicPrefix + stepType }

// FileKey is the message key of everything about one file.
func FileKey(fileID int64) string { return strconv.FormatInt(fileID, 10) }

// RetryTier is one delay topic: a failed task waits Delay (± jitter, applied
// by the engine) on Topic() before it is re-run.
type RetryTier struct {
	Name  string        // "60s", "300s", "250ms"
	Delay time.Duration // nominal delay
}

// Topic names the tier's delay topic, e.g. docflow.retry.60s.
func (t RetryTier) Topic() string { return retryTopicPrefix + t.Name }

// DefaultRetryTiers are the production delays: 60 s, 300 s, 900 s.
func DefaultRetryTiers() []RetryTier {
	return RetryTiersFor(60*time.Second, 300*time.Second, 900*time.Second)
}

// RetryTiersFor names one tier per delay: whole seconds as "<n>s", anything
// else as "<n>ms" (tests use millisecond delays, which then get their own
// topics and never mix with production ones).
func RetryTiersFor(delays ...time.Duration) []RetryTier {
	tiers := make([]RetryTier, 0, len(delays))
	for _, d := range delays {
		name := strconv.FormatInt(d.Milliseconds(), 10) + "ms"
		if d%time.Second == 0 {
			name = strconv.FormatInt(int64(d/time.Second), 10) + "s"
		}
		tiers = append(tiers, RetryTier{Name: name, Delay: d})
	}
	return tiers
}

// Topics is the catalogue of one deployment: the step types that get a task
// topic, the retry tiers and the partition count.
type Topics struct {
	Partitions        int         // 0 = DefaultPartitions
	ReplicationFactor int         // 0 = 1 (the embedded broker has one node)
	Steps             []string    // step types with a task topic
	Retry             []RetryTier // delay topics
}

// DefaultTopics is the catalogue for docflow.StandardSteps plus extraSteps
// (the engine's test step type, for instance) with the default retry tiers.
func DefaultTopics(extraSteps ...string) Topics {
	steps := append(append([]string(nil), docflow.StandardSteps...), extraSteps...)
	return Topics{Partitions: DefaultPartitions, Steps: steps, Retry: DefaultRetryTiers()}
}

// Names lists every topic of the catalogue, each once: tiers of equal
// delays (retry delays 1,1) share their delay topic, and a request to
// create a topic twice is refused by the broker as a whole.
func (t Topics) Names() []string {
	names := []string{TopicFilesIngested}
	for _, s := range t.Steps {
		names = append(names, StepTopic(s))
	}
	for _, r := range t.Retry {
		names = append(names, r.Topic())
	}
	names = append(names, TopicDLQ, TopicEvents, TopicDestinations)
	seen := make(map[string]bool, len(names))
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// Configs returns the topic configurations EnsureTopics creates.
func (t Topics) Configs() []kafka.TopicConfig {
	parts, rf := t.Partitions, t.ReplicationFactor
	if parts <= 0 {
		parts = DefaultPartitions
	}
	if rf <= 0 {
		rf = 1
	}
	names := t.Names()
	cfgs := make([]kafka.TopicConfig, 0, len(names))
	for _, n := range names {
		cfgs = append(cfgs, kafka.TopicConfig{Topic: n, NumPartitions: parts, ReplicationFactor: rf})
	}
	return cfgs
}

// EnsureNamedTopics is EnsureTopics for the topics names, each with
// partitions partitions (DefaultPartitions when 0) and one replica.
func EnsureNamedTopics(ctx context.Context, brokers []string, partitions int, names ...string) error {
	if partitions <= 0 {
		partitions = DefaultPartitions
	}
	cfgs := make([]kafka.TopicConfig, 0, len(names))
	for _, n := range names {
		cfgs = append(cfgs, kafka.TopicConfig{Topic: n, NumPartitions: partitions, ReplicationFactor: 1})
	}
	return EnsureTopics(ctx, brokers, cfgs)
}

// EnsureTopics creates the topics that do not exist yet on the cluster's
// controller. Existing topics are left as they are (their partition count is
// not changed).
//
// NOTE: call it before the first publish: kafka-go's writer caches topic
// metadata for about 6 s and fails writes to a topic created after it
// looked.
func EnsureTopics(ctx context.Context, brokers []string, topics []kafka.TopicConfig) error {
	if len(brokers) == 0 {
		return errors.New("ensure topics: no brokers")
	}
	var d kafka.Dialer
	conn, err := dialAny(ctx, &d, brokers)
	if err != nil {
		return fmt.Errorf("ensure topics: %w", err)
	}
	ctrl, err := conn.Controller()
	conn.Close()
	if err != nil {
		return fmt.Errorf("ensure topics: find controller: %w", err)
	}
	cc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("ensure topics: dial controller: %w", err)
	}
	defer cc.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = cc.SetDeadline(dl)
	}
	if err := cc.CreateTopics(topics...); err != nil {
		return fmt.Errorf("ensure topics: %w", err)
	}
	return nil
}

func dialAny(ctx context.Context, d *kafka.Dialer, brokers []string) (*kafka.Conn, error) {
	var last error
	for _, b := range brokers {
		c, err := d.DialContext(ctx, "tcp", b)
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, fmt.Errorf("dial %v: %w", brokers, last)
}
