// Package pipeline is docflow's pipeline engine: router actors that route
// each ingested file to its pipeline, one consumer group and one kind of
// recovered step actors per step type, retries through delay topics, the
// dead-letter topic, stall detection and recovery on start. Every step
// result, its log row, the file's new fields and the outbox row for what
// comes next are written in one transaction before the Kafka offset is
// committed.
//
// # Actors
//
//   - "router/0" … "router/511" (as many as the router consumer's in-flight
//     budget): each receives one file.ingested delivery at
//     a time, routes the run (one transaction) and acknowledges it.
//   - "step-<type>/0" … "step-<type>/<n-1>", n = the step type's pool size
//     (STEP_POOL_SIZES; OCR: the cores, convert_to_pdf:
//     CONVERT_CONCURRENCY, others 8): each receives one task delivery at a
//     time, leases the step, runs it under STEP_TIMEOUT and hands the
//     outcome to recording. The pool size is the only bound on steps running
//     at once; the consumer's in-flight budget bounds the tasks waiting for
//     an actor.
//
// Every actor is spawned with actors.Recover (recovered, not restarted): a
// panic in a step is a failed attempt (error class "panic") and a panic
// elsewhere dead-letters its delivery; none reaches hollywood.
//
// # Goroutines
//
// The consumers' fetch goroutines (streams.Consumer) decode each delivery and
// send it to an actor; they never wait for the work. Beside the actors, per
// task: the step attempt's goroutine (actors.RunTimed: the only way to
// abandon a step that ignores its context) and the recording goroutine
// (group-committed write, write-through publish, acknowledgement; a panic
// in it dead-letters the delivery), which lets the actor take its next
// task meanwhile; a running step's lease is
// renewed from a timer (time.AfterFunc), not a waiting goroutine. The
// delayed tasks wait in the delay relay's one heap, on its one goroutine
// and timer, however many they are. Per engine: two group-commit flushers each for claims and results, the
// write-through flusher, the stall detector and the worker heartbeat. Stop
// waits for all of them.
//
// # Storage
//
// The engine declares what it asks of storage (store.go: Store, made of
// Claims, Results, Routing, Recovery, Workers and QueueStore; Pipelines and
// Rules for the router) and is handed them in Config; storetest is the
// contract suite every Store runs. Storage errors reach it as docflow
// codes, never as the database's: EUNAVAILABLE means wait and try again,
// ENOTFOUND that the row is gone.
package pipeline
