package actors

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"
	"golang.org/x/time/rate"

	"docflow/internal/testsupport"
)

// fakeConfig configures a fakeClient: Addr names it, FailConnects is how
// many Connects of each client fail first.
type fakeConfig struct {
	Addr         string
	FailConnects int
}

// fakeService records what the integration actor did to its clients.
type fakeService struct {
	mu       sync.Mutex
	connects []time.Time // every Connect, failed or not
	built    []string    // the Addr of every client built
	closed   []string    // the Addr of every client closed
	states   []IntegrationState
	inCall   int // calls running at once (must stay ≤ 1)
}

type fakeClient struct {
	svc   *fakeService
	cfg   fakeConfig
	tries int
	open  bool
}

func (s *fakeService) new(cfg fakeConfig) (*fakeClient, error) {
	if cfg.Addr == "" {
		return nil, errors.New("no address")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.built = append(s.built, cfg.Addr)
	return &fakeClient{svc: s, cfg: cfg}, nil
}

func (k *fakeClient) Connect(context.Context) error {
	k.svc.mu.Lock()
	defer k.svc.mu.Unlock()
	k.svc.connects = append(k.svc.connects, time.Now())
	k.tries++
	if k.tries <= k.cfg.FailConnects {
		return fmt.Errorf("%s refused (try %d)", k.cfg.Addr, k.tries)
	}
	k.open = true
	return nil
}

func (k *fakeClient) Close(context.Context) error {
	k.svc.mu.Lock()
	defer k.svc.mu.Unlock()
	k.open = false
	k.svc.closed = append(k.svc.closed, k.cfg.Addr)
	return nil
}

// Send is the fake integration's action: it answers with the client's
// address, and reports a lost connection when asked to.
func (k *fakeClient) Send(msg string) (string, error) {
	k.svc.mu.Lock()
	k.svc.inCall++
	n := k.svc.inCall
	k.svc.mu.Unlock()
	defer func() { k.svc.mu.Lock(); k.svc.inCall--; k.svc.mu.Unlock() }()
	switch {
	case n > 1:
		return "", errors.New("two calls at once on one client")
	case !k.open:
		return "", errors.New("send on a closed client")
	case msg == "drop":
		return "", Disconnected(errors.New("peer reset"))
	case msg == "panic":
		panic("client exploded")
	}
	return k.cfg.Addr + ":" + msg, nil
}

func (s *fakeService) snapshot() (connects []time.Time, built, closed []string, states []IntegrationState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.connects...), append([]string(nil), s.built...),
		append([]string(nil), s.closed...), append([]IntegrationState(nil), s.states...)
}

func spawnFake(t *testing.T, e *actor.Engine, svc *fakeService, cfg fakeConfig, adjust func(*IntegrationConfig[fakeConfig, *fakeClient])) *actor.PID {
	t.Helper()
	ic := IntegrationConfig[fakeConfig, *fakeClient]{
		Name: "fake-" + t.Name(), Config: cfg, New: svc.new,
		InitialBackoff: 20 * time.Millisecond, MaxBackoff: 80 * time.Millisecond,
		OnState: func(s IntegrationState, _ error) {
			svc.mu.Lock()
			svc.states = append(svc.states, s)
			svc.mu.Unlock()
		},
		Log: testLogger(t),
	}
	if adjust != nil {
		adjust(&ic)
	}
	pid, err := SpawnIntegration(e, ic)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { <-e.Poison(pid).Done() })
	return pid
}

// send makes one Call and waits for its result (a test is not an actor).
func send(e *actor.Engine, pid *actor.PID, msg string) (string, error) {
	var out string
	done := make(chan error, 1)
	e.Send(pid, &Call[*fakeClient]{Do: func(_ context.Context, k *fakeClient) error {
		var err error
		out, err = k.Send(msg)
		return err
	}, Done: func(err error) { done <- err }})
	select {
	case err := <-done:
		return out, err
	case <-time.After(10 * time.Second):
		return "", errors.New("no reply")
	}
}

func waitConnected(t *testing.T, e *actor.Engine, pid *actor.PID) {
	t.Helper()
	testsupport.WaitFor(t, time.Minute, "connected", func() bool {
		_, err := send(e, pid, "ping")
		return err == nil
	})
}

// A refused connect is tried again after a growing, jittered backoff;
// calls meanwhile fail with ErrNotConnected; once connected they are served.
func TestIntegrationBacksOffUntilConnected(t *testing.T) {
	e := newTestEngine(t)
	svc := &fakeService{}
	pid := spawnFake(t, e, svc, fakeConfig{Addr: "a", FailConnects: 4}, nil)
	if _, err := send(e, pid, "early"); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("call before connecting: %v", err)
	}
	waitConnected(t, e, pid)
	if got, err := send(e, pid, "hello"); err != nil || got != "a:hello" {
		t.Fatalf("call: %q %v", got, err)
	}
	connects, built, _, states := svc.snapshot()
	if len(connects) != 5 || len(built) != 1 {
		t.Fatalf("%d connects, %d clients built; want 5, 1", len(connects), len(built))
	}
	// Intervals 20, 40, 80, 80 ms, each within ±50 %.
	for i, want := range []time.Duration{20, 40, 80, 80} {
		want *= time.Millisecond
		gap := connects[i+1].Sub(connects[i])
		if gap < want/2 || gap > 3*want {
			t.Fatalf("backoff %d: %v, want about %v", i, gap, want)
		}
	}
	if states[0] != IntegrationBackingOff || states[len(states)-1] != IntegrationConnected {
		t.Fatalf("states %v", states)
	}
}

// Reconfigure closes the old client and connects one built for the new
// configuration; Stop closes it and refuses calls until Start.
func TestIntegrationReconfigureStopStart(t *testing.T) {
	e := newTestEngine(t)
	svc := &fakeService{}
	pid := spawnFake(t, e, svc, fakeConfig{Addr: "old"}, nil)
	waitConnected(t, e, pid)
	e.Send(pid, IntegrationReconfigure[fakeConfig]{Config: fakeConfig{Addr: "new"}})
	if got, err := send(e, pid, "x"); err != nil || got != "new:x" {
		t.Fatalf("after reconfigure: %q %v", got, err)
	}
	e.Send(pid, IntegrationStop{})
	if _, err := send(e, pid, "x"); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("after stop: %v", err)
	}
	_, built, closed, _ := svc.snapshot()
	if fmt.Sprint(built) != "[old new]" || fmt.Sprint(closed) != "[old new]" {
		t.Fatalf("built %v closed %v", built, closed)
	}
	e.Send(pid, IntegrationStart{})
	if got, err := send(e, pid, "y"); err != nil || got != "new:y" {
		t.Fatalf("after start: %q %v", got, err)
	}
	// A configuration that cannot build a client fails the integration
	// until a good one comes.
	e.Send(pid, IntegrationReconfigure[fakeConfig]{Config: fakeConfig{}})
	if _, err := send(e, pid, "z"); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("with a bad configuration: %v", err)
	}
	e.Send(pid, IntegrationReconfigure[fakeConfig]{Config: fakeConfig{Addr: "fixed"}})
	if got, err := send(e, pid, "z"); err != nil || got != "fixed:z" {
		t.Fatalf("after the fix: %q %v", got, err)
	}
	_, _, _, states := svc.snapshot()
	if !containsState(states, IntegrationStopped) || !containsState(states, IntegrationFailed) {
		t.Fatalf("states %v", states)
	}
}

func containsState(states []IntegrationState, s IntegrationState) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// A lost connection is closed and reconnected; a panicking call is that
// call's error and the actor keeps its client; calls never overlap, and the
// rate limit paces them.
func TestIntegrationCallsLostConnectionsPanicsAndRate(t *testing.T) {
	e := newTestEngine(t)
	svc := &fakeService{}
	pid := spawnFake(t, e, svc, fakeConfig{Addr: "r"}, func(c *IntegrationConfig[fakeConfig, *fakeClient]) {
		c.Rate, c.Burst = rate.Every(25*time.Millisecond), 1
	})
	waitConnected(t, e, pid)
	if _, err := send(e, pid, "drop"); !errors.Is(err, ErrDisconnected) {
		t.Fatalf("dropped call: %v", err)
	}
	waitConnected(t, e, pid)
	_, built, closed, _ := svc.snapshot()
	if len(built) != 1 || len(closed) != 1 {
		t.Fatalf("built %v closed %v: a lost connection reconnects the same client", built, closed)
	}
	var perr *PanicError
	if _, err := send(e, pid, "panic"); !errors.As(err, &perr) || perr.Value != "client exploded" {
		t.Fatalf("panicking call: %v", err)
	}
	// Twenty calls sent at once: served one at a time, 25 ms apart.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := send(e, pid, fmt.Sprint(i)); err != nil || got != fmt.Sprintf("r:%d", i) {
				errs <- fmt.Errorf("call %d: %q %v", i, got, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Fatalf("20 calls at 40/s took %v", el)
	}
}

// Replies go to an actor as CallResult messages.
func TestIntegrationRepliesToAnActor(t *testing.T) {
	e := newTestEngine(t)
	svc := &fakeService{}
	pid := spawnFake(t, e, svc, fakeConfig{Addr: "m"}, nil)
	waitConnected(t, e, pid)
	got := make(chan CallResult, 1)
	e.Spawn(func() actor.Receiver {
		return receiverFunc(func(c *actor.Context) {
			switch m := c.Message().(type) {
			case actor.Started:
				c.Send(pid, &Call[*fakeClient]{ID: "c1", ReplyTo: c.PID(), Do: func(_ context.Context, k *fakeClient) error {
					_, err := k.Send("drop")
					return err
				}})
			case CallResult:
				got <- m
			}
		})
	}, "asker", SpawnOpts(testLogger(t))...)
	select {
	case r := <-got:
		if r.ID != "c1" || !errors.Is(r.Err, ErrDisconnected) {
			t.Fatalf("result %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
}
