package streams

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestDelayRelayWaitsUntilDue(t *testing.T) {
	t.Parallel()
	pub := &capturePublisher{ch: make(chan Message, 4)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := NewDelayRelay(ctx, pub, zerolog.Nop(), time.Now, "task")
	due := time.Now().Add(150 * time.Millisecond)
	m := Message{Topic: "docflow.retry.1s", Key: []byte("1"), Value: []byte("task"), Headers: []Header{
		{Key: HeaderDueAt, Value: []byte(fmt.Sprint(due.UnixMilli()))},
		{Key: HeaderTargetTopic, Value: []byte("docflow.steps.ocr")},
		{Key: HeaderReason, Value: []byte("flaky")},
	}}
	go func() {
		if !r.Forward(m, due.UnixMilli(), "docflow.steps.ocr") {
			t.Error("not forwarded")
		}
	}()
	select {
	case out := <-pub.ch:
		if time.Now().Before(time.UnixMilli(due.UnixMilli())) {
			t.Fatal("published before due")
		}
		if out.Topic != "docflow.steps.ocr" || string(out.Value) != "task" || HeaderValue(out, HeaderDueAt) != "" ||
			HeaderValue(out, HeaderReason) != "flaky" {
			t.Fatalf("republished %+v", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("never republished")
	}
	// A stopped relay leaves the task alone.
	cancel()
	if r.Forward(m, time.Now().Add(time.Hour).UnixMilli(), "docflow.steps.ocr") {
		t.Fatal("forwarded after stop")
	}
}

type capturePublisher struct{ ch chan Message }

func (c *capturePublisher) Publish(_ context.Context, msgs ...Message) error {
	for _, m := range msgs {
		c.ch <- m
	}
	return nil
}
