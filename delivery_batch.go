package docflow

// RecordedAttempt is one attempt of a delivery to Subscriber, recorded
// with Retry (the message that brings the next attempt back; nil when
// there is none) in a batch of attempts written together.
type RecordedAttempt struct {
	Subscriber Subscriber
	Attempt    DeliveryAttempt
	Retry      *OutboxMessage
}
