package docflow

import "time"

// OutboxMessage is one row of the transactional outbox: a message to
// publish once the transaction that writes it commits. The streams package
// builds them (one constructor per kind of message); storage writes them in
// the transaction that makes the change they announce; the relay publishes
// them to Kafka.
type OutboxMessage struct {
	Topic string
	// Key is the Kafka message key: the file id (decimal) for everything
	// about a file, so that one file's messages keep their order.
	Key     string
	Payload []byte // the encoded envelope
	Headers map[string]string
	// AvailableAt delays the publish (retry back-off, a scheduled
	// intake); zero = at once.
	AvailableAt time.Time
}

// OutboxRow is an outbox message read back for publishing, with the id
// that orders the rows of one (topic, key) and marks it sent.
type OutboxRow struct {
	ID int64
	OutboxMessage
}
