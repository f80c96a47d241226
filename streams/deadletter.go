package streams

import (
	"strconv"
	"strings"
)

// Headers of dead letters and retried tasks.
const (
	HeaderReason            = "x-reason"             // why the message was dead-lettered
	HeaderStep              = "x-step"               // the step (or consumer) that gave up
	HeaderAttempt           = "x-attempt"            // the attempt that failed last
	HeaderOriginalTopic     = "x-original-topic"     // where the message was consumed from
	HeaderOriginalPartition = "x-original-partition" // its partition there
	HeaderOriginalOffset    = "x-original-offset"    // its offset there
)

// maxReason keeps a dead letter's reason header small.
const maxReason = 1024

// DeadLetter builds the dead-letter copy of m for topic: same key and value,
// m's headers (except the dead-letter ones, which are replaced) plus
// x-reason, x-step, x-attempt and the original position.
func DeadLetter(m Message, topic, reason, step string, attempt int) Message {
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	headers := make([]Header, 0, len(m.Headers)+6)
	for _, h := range m.Headers {
		if !strings.HasPrefix(h.Key, "x-original-") && h.Key != HeaderReason && h.Key != HeaderStep && h.Key != HeaderAttempt {
			headers = append(headers, h)
		}
	}
	headers = append(headers,
		Header{Key: HeaderReason, Value: []byte(reason)},
		Header{Key: HeaderStep, Value: []byte(step)},
		Header{Key: HeaderAttempt, Value: []byte(strconv.Itoa(attempt))},
		Header{Key: HeaderOriginalTopic, Value: []byte(m.Topic)},
		Header{Key: HeaderOriginalPartition, Value: []byte(strconv.Itoa(m.Partition))},
		Header{Key: HeaderOriginalOffset, Value: []byte(strconv.FormatInt(m.Offset, 10))},
	)
	return Message{Topic: topic, Key: m.Key, Value: m.Value, Headers: headers}
}

// HeaderValue returns the last value of header key in m, or "".
func HeaderValue(m Message, key string) string {
	v := ""
	for _, h := range m.Headers {
		if h.Key == key {
			v = string(h.Value)
		}
	}
	return v
}
