// Package streams builds docflow's messages and carries them over Kafka: the
// topic catalogue, versioned envelopes, the catalogue of messages (the only
// place an outbox message is built), the producer, the consumer that commits
// only acknowledged contiguous offsets, the outbox relay and write-through
// (over the outbox that storage owns: streams uses no database driver) and
// the embedded Kafka-protocol broker. It is the one package that speaks
// Kafka (kafka-go).
//
// Its files:
//   - topics.go: the topics, their partitions and the retry tiers.
//   - envelope.go: the versioned envelope and its payloads (FileIngested,
//     StepTask, Event).
//   - messages.go: one constructor per kind of message (file.ingested, step
//     task, retry, dead letter, document and file events) and the one
//     event-id generator; deadletter.go, the dead letters' format.
//   - producer.go: the producer (Publisher).
//   - consumer.go, offsets.go: the consumer-group consumer; handlers run
//     asynchronously and only contiguous acknowledged offsets are committed.
//   - relay.go: the outbox relay over the OutboxStore it declares (woken
//     by LISTEN, with a poll for the rest).
//   - writethrough.go, publish.go: a committed transaction's rows published
//     at once, the way the relay publishes them.
//   - delay.go: DelayRelay, which returns a message of a delay topic to its
//     target topic once due (the pipeline's and the deliveries' retry
//     tiers), every waiting message in one heap under one timer.
//   - lag.go: each partition's lag behind a consumer group.
//   - control.go: the control topic, read by every process from its end
//     without a group (ControlListener), and its message: a system reset.
//   - broker.go: the embedded broker (franz-go's kfake, persisted under
//     WORKDIR/broker) for serve and the tests.
package streams
