// Package delivery delivers docflow's events to their subscribers:
// webhooks and automation hooks (integrations/webhook), push devices
// (integrations/expo) and the admin channels (AdminSender, over
// integrations/notify), each subscriber kind through the Sender it is
// handed; this package decides when and to whom, the senders make the
// attempts.
//
// A consumer group on the events topic fans each deliverable event out:
// the store records one delivery per (event id, subscriber) in PostgreSQL,
// idempotently, and each delivery goes to the actor of its subscriber,
// which makes the attempt on a goroutine of its own (never inside Receive)
// with at most WEBHOOK_CONCURRENCY attempts at once, so a slow or dead
// receiver only ever delays its own deliveries, and one that hangs on some
// events only those: the other slots take its retries and newer events. An event is acknowledged once
// every one of its deliveries is resolved: delivered, given up, dropped,
// or recorded as failed together with its retry, which the same
// transaction writes to the outbox for the delay topic of its tier. The
// delay relay (a second consumer group) holds each retry until it is due
// and publishes it to the attempts topic, where the first group takes it
// again. A process killed with deliveries in flight acknowledged none of
// them: the next owner of the partition makes them again, with the same
// event id (at least once).
//
// The actors: "delivery/<kind>:<id>" (delivery/webhook:3), one per
// subscriber with deliveries. Each queues its subscriber's attempts,
// starts at most WEBHOOK_CONCURRENCY at once, each on a goroutine (the request
// under WEBHOOK_TIMEOUT through actors.RunTimed), and records each attempt
// with its retry in a batch of attempts before the acknowledgement. A
// subscriber all of whose slots hold attempts unanswered for StallAfter
// has its whole queue postponed to the retry tiers, a failing or slow one
// its queue
// beyond MaxQueue (subscriberActor says how): a slow or dead receiver
// holds only its own actor's slots, not memory nor the consumer's
// in-flight window.
//
// Its files:
//   - delivery.go: Service, its consumer groups, the fan-out and the
//     retry tiers (WEBHOOK_RETRY_DELAYS).
//   - actor.go: the subscriber's actor, its queue, stalls and
//     postponements.
//   - batch.go: attempts recorded a batch at a time.
//   - target.go: subscribers' targets, read once per TargetTTL.
//   - admin.go: AdminSender, the subscriber "admin" (user.payment_issue,
//     and document.failed when NOTIFY_ON_DOCUMENT_FAILED) through a
//     docflow.Notifier; AdminEvents chooses them.
package delivery
