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

func truncateReason(reason string) string {
	if len(reason) > maxReason {
		return reason[:maxReason]
	}
	return reason
}

// deadLetterHeaders is the one dead-letter format, whoever gives up: why
// (x-reason, at most maxReason bytes), which step, after which attempt, and
// where the message came from: its topic, and its partition and offset
// when it was consumed from there (partition < 0: not known).
func deadLetterHeaders(reason, step string, attempt int, topic string, partition int, offset int64) []Header {
	hs := []Header{
		{Key: HeaderReason, Value: []byte(truncateReason(reason))},
		{Key: HeaderStep, Value: []byte(step)},
		{Key: HeaderAttempt, Value: []byte(strconv.Itoa(attempt))},
		{Key: HeaderOriginalTopic, Value: []byte(topic)},
	}
	if partition >= 0 {
		hs = append(hs,
			Header{Key: HeaderOriginalPartition, Value: []byte(strconv.Itoa(partition))},
			Header{Key: HeaderOriginalOffset, Value: []byte(strconv.FormatInt(offset, 10))})
	}
	return hs
}

// isDeadLetterHeader reports whether key belongs to the dead-letter format.
func isDeadLetterHeader(key string) bool {
	return strings.HasPrefix(key, "x-original-") || key == HeaderReason || key == HeaderStep || key == HeaderAttempt
}

// DeadLetter builds the dead-letter copy of the consumed message m for
// topic: same key and value, m's headers (except the dead-letter ones,
// which are replaced) plus the dead-letter headers with m's position.
func DeadLetter(m Message, topic, reason, step string, attempt int) Message {
	headers := make([]Header, 0, len(m.Headers)+6)
	for _, h := range m.Headers {
		if !isDeadLetterHeader(h.Key) {
			headers = append(headers, h)
		}
	}
	headers = append(headers, deadLetterHeaders(reason, step, attempt, m.Topic, m.Partition, m.Offset)...)
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
