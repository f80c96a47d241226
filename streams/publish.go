package streams

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/segmentio/kafka-go"

	"docflow"
)

// kafkaMessage is outbox message m as the producer sends it: headers in
// name order, no key when m has none.
func kafkaMessage(m docflow.OutboxMessage) Message {
	km := Message{Topic: m.Topic, Value: m.Payload}
	if m.Key != "" {
		km.Key = []byte(m.Key)
	}
	if len(m.Headers) > 0 {
		names := make([]string, 0, len(m.Headers))
		for k := range m.Headers {
			names = append(names, k)
		}
		sort.Strings(names)
		km.Headers = make([]Header, 0, len(names))
		for _, k := range names {
			km.Headers = append(km.Headers, Header{Key: k, Value: []byte(m.Headers[k])})
		}
	}
	return km
}

// topicFailure is a publish that failed for some rows of one topic.
type topicFailure struct {
	topic  string
	rows   int   // rows of the topic
	failed int   // of which failed
	first  int64 // the first row's id
	err    error
}

// publishRows publishes outbox rows with pub, one Publish call per topic
// (concurrently), and reports which rows the broker acknowledged, with the
// failures by topic. Rows of one (topic, key) keep their order.
//
// NOTE: kafka-go fails a whole WriteMessages call when any of its topics is
// unknown, so one bad row would fail every row published with it. Per-topic
// calls confine a failure to its topic.
func publishRows(ctx context.Context, pub Publisher, rows []docflow.OutboxRow) (ok []bool, failures []topicFailure) {
	ok = make([]bool, len(rows))
	groups := map[string][]int{}
	var order []string
	for i, r := range rows {
		if _, seen := groups[r.Topic]; !seen {
			order = append(order, r.Topic)
		}
		groups[r.Topic] = append(groups[r.Topic], i)
	}
	var mu sync.Mutex
	one := func(topic string, idx []int) {
		part := make([]Message, len(idx))
		for j, i := range idx {
			part[j] = kafkaMessage(rows[i].OutboxMessage)
		}
		err := pub.Publish(ctx, part...)
		if err == nil {
			for _, i := range idx {
				ok[i] = true
			}
			return
		}
		f := topicFailure{topic: topic, rows: len(idx), failed: len(idx), first: rows[idx[0]].ID, err: err}
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == len(idx) {
			for j, i := range idx {
				ok[i] = werrs[j] == nil
			}
			f.failed = werrs.Count()
		}
		mu.Lock()
		failures = append(failures, f)
		mu.Unlock()
	}
	if len(order) == 1 {
		one(order[0], groups[order[0]])
		return ok, failures
	}
	var wg sync.WaitGroup
	for _, topic := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(topic, groups[topic])
		}()
	}
	wg.Wait()
	return ok, failures
}
