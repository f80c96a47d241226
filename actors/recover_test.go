package actors

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"github.com/rs/zerolog"

	"docflow/internal/testsupport"
)

type boomMsg struct {
	mu  sync.Mutex
	err error
	ch  chan struct{}
}

func (m *boomMsg) Fail(err error) {
	m.mu.Lock()
	m.err = err
	m.mu.Unlock()
	close(m.ch)
}

// TestRecoverTurnsPanicIntoResult panics far more often than hollywood's
// restart limit: every panic becomes an error result, the actor keeps its
// state and the process survives.
func TestRecoverTurnsPanicIntoResult(t *testing.T) {
	var logs testsupport.LogBuffer
	log := zerolog.New(&logs)
	e := newTestEngine(t)

	handled := 0
	pid := e.SpawnFunc(func(c *actor.Context) {
		switch m := c.Message().(type) {
		case *boomMsg:
			panic("boom")
		case string:
			if m == "panic" {
				panic(errors.New("requested"))
			}
			handled++
			c.Respond(handled)
		}
	}, "recover-test", actor.WithMiddleware(Recover(log)), actor.WithMaxRestarts(1))

	for i := range 20 {
		m := &boomMsg{ch: make(chan struct{})}
		e.Send(pid, m)
		select {
		case <-m.ch:
		case <-time.After(5 * time.Second):
			t.Fatalf("panic %d produced no result", i)
		}
		var perr *PanicError
		if !errors.As(m.err, &perr) || perr.Value != "boom" || !bytes.Contains(perr.Stack, []byte("recover_test.go")) {
			t.Fatalf("result %v", m.err)
		}
	}
	// A Request gets the *PanicError as its answer.
	res, err := e.Request(pid, "panic", 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if perr, ok := res.(*PanicError); !ok || !strings.Contains(perr.Error(), "requested") {
		t.Fatalf("request answered %#v", res)
	}
	// Still alive, state kept.
	for want := 1; want <= 2; want++ {
		res, err := e.Request(pid, "count", 5*time.Second).Result()
		if err != nil || res != want {
			t.Fatalf("after panics: %v %v, want %d", res, err, want)
		}
	}
	if n := strings.Count(logs.String(), "actor panicked"); n != 21 {
		t.Fatalf("logged %d panics, want 21", n)
	}
	if !strings.Contains(logs.String(), `"stack":"goroutine`) {
		t.Fatalf("panic logged without a stack: %.300s", logs.String())
	}
}

func newTestEngine(t *testing.T) *actor.Engine {
	t.Helper()
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A panic in a goroutine an actor started ends that goroutine, logged,
// and its deferred report still runs.
func TestGoRecovers(t *testing.T) {
	var buf testsupport.LogBuffer
	log := zerolog.New(&buf)
	reported := make(chan bool, 1)
	Go(log, "test job", func() {
		defer func() { reported <- true }()
		panic("boom")
	})
	select {
	case <-reported:
	case <-time.After(5 * time.Second):
		t.Fatal("the deferred report did not run")
	}
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(buf.String(), "goroutine of an actor panicked") {
		if time.Now().After(deadline) {
			t.Fatalf("panic not logged: %q", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(buf.String(), "test job") {
		t.Fatalf("log does not name the goroutine: %q", buf.String())
	}
}
