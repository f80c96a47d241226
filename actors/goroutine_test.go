package actors

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// Group.Wait waits for what Go started before it, and Go started while or
// after Wait runs starts nothing and says so; the two may race (run with
// -race).
func TestGroupWaitRefusesLaterWork(t *testing.T) {
	var g Group
	log := zerolog.Nop()
	release := make(chan struct{})
	var ran atomic.Int64
	if !g.Go(log, "first", func() { <-release; ran.Add(1) }) {
		t.Fatal("Go before Wait refused")
	}
	waited := make(chan struct{})
	go func() { g.Wait(); close(waited) }()
	// Callers racing with Wait, as actors still receiving while their
	// service closes.
	var wg sync.WaitGroup
	var started atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if g.Go(log, "racing", func() { ran.Add(1) }) {
					started.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	select {
	case <-waited:
		t.Fatal("Wait returned while a goroutine started before it still ran")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-waited
	if got, want := ran.Load(), 1+started.Load(); got != want {
		t.Fatalf("%d goroutines ran by the end of Wait, %d were started", got, want)
	}
	if g.Go(log, "late", func() { t.Error("ran after Wait") }) {
		t.Fatal("Go after Wait started its function")
	}
}

// A panic in a goroutine of a Group is recovered and still counted done.
func TestGroupRecoversPanics(t *testing.T) {
	var g Group
	g.Go(zerolog.Nop(), "panics", func() { panic("boom") })
	g.Wait()
}
