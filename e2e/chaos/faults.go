package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
)

// The fault kinds, in the order of the report.
const (
	FaultKillAPI         = "SIGKILL api"
	FaultKillWorker      = "SIGKILL worker"
	FaultKillBroker      = "SIGKILL broker"
	FaultRestartBroker   = "restart broker (SIGTERM)"
	FaultRestartPostgres = "restart PostgreSQL (crash)"
	FaultStopClickHouse  = "stop ClickHouse"
	FaultPauseWorker     = "SIGSTOP worker past its lease"
)

// FaultKinds lists every kind the driver injects.
var FaultKinds = []string{FaultKillAPI, FaultKillWorker, FaultKillBroker, FaultRestartBroker,
	FaultRestartPostgres, FaultStopClickHouse, FaultPauseWorker}

// faultTimings shape the fault driver.
type faultTimings struct {
	Every      time.Duration // mean time between two faults
	ClickHouse time.Duration // how long ClickHouse stays down
	Pause      time.Duration // how long a worker stays stopped (past the 30 s lease)
	Down       time.Duration // longest a killed process or PostgreSQL stays down
}

// faults injects faults into d at random moments until ctx ends, every
// kind first once in random order, then at random. Each fault that holds
// something down (ClickHouse, a paused worker) runs on its own; the
// others are injected one at a time. A process is not faulted again while
// a fault holds it.
type faults struct {
	d   *Deployment
	t   faultTimings
	rng *rand.Rand
	log func(format string, args ...any)

	mu     sync.Mutex
	counts map[string]int
	errs   []string
	busy   map[*Proc]bool
	chDown bool
	wg     sync.WaitGroup
}

func (f *faults) count(kind string) {
	f.mu.Lock()
	f.counts[kind]++
	f.mu.Unlock()
}

func (f *faults) fail(kind string, err error) {
	f.mu.Lock()
	f.errs = append(f.errs, fmt.Sprintf("%s: %v", kind, err))
	f.mu.Unlock()
	f.log("fault %s failed: %v", kind, err)
}

// take marks a free process among ps busy and returns it (nil: none free).
func (f *faults) take(ps []*Proc) *Proc {
	f.mu.Lock()
	defer f.mu.Unlock()
	var free []*Proc
	for _, p := range ps {
		if !f.busy[p] && p.Running() {
			free = append(free, p)
		}
	}
	if len(free) == 0 {
		return nil
	}
	p := free[f.rng.IntN(len(free))]
	f.busy[p] = true
	p.hold(true)
	return p
}

func (f *faults) release(p *Proc) {
	f.mu.Lock()
	delete(f.busy, p)
	f.mu.Unlock()
	p.hold(false)
}

func (f *faults) run(ctx context.Context) {
	order := append([]string(nil), FaultKinds...)
	f.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i := 0; ; i++ {
		wait := f.t.Every/2 + time.Duration(f.rng.Int64N(int64(f.t.Every)))
		select {
		case <-ctx.Done():
			f.wg.Wait()
			return
		case <-time.After(wait):
		}
		kind := FaultKinds[f.rng.IntN(len(FaultKinds))]
		if i < len(order) {
			kind = order[i]
		}
		f.inject(ctx, kind)
	}
}

// downFor is a random outage of up to t.Down.
func (f *faults) downFor() time.Duration {
	return time.Duration(f.rng.Int64N(int64(f.t.Down) + 1))
}

func (f *faults) inject(ctx context.Context, kind string) {
	d := f.d
	kill := func(ps []*Proc) {
		p := f.take(ps)
		if p == nil {
			return
		}
		defer f.release(p)
		f.log("fault: %s %s (pid %d)", kind, p.Name, p.Pid())
		p.Kill()
		f.count(kind)
		time.Sleep(f.downFor())
		if err := p.Start(); err != nil {
			f.fail(kind, err)
		}
	}
	switch kind {
	case FaultKillAPI:
		kill(d.APIs)
	case FaultKillWorker:
		kill(d.Workers)
	case FaultKillBroker:
		kill([]*Proc{d.Broker})
	case FaultRestartBroker:
		p := f.take([]*Proc{d.Broker})
		if p == nil {
			return
		}
		defer f.release(p)
		f.log("fault: %s", kind)
		p.Stop(30 * time.Second)
		f.count(kind)
		if err := p.Start(); err != nil {
			f.fail(kind, err)
		}
	case FaultRestartPostgres:
		if d.PG == nil {
			return
		}
		f.log("fault: %s", kind)
		if err := d.PG.Crash(ctx); err != nil {
			f.fail(kind, err)
			return
		}
		f.count(kind)
		time.Sleep(f.downFor())
		if err := d.PG.Start(context.Background()); err != nil {
			f.fail(kind, err)
		}
	case FaultStopClickHouse:
		f.mu.Lock()
		if d.CH == nil || f.chDown {
			f.mu.Unlock()
			return
		}
		f.chDown = true
		f.mu.Unlock()
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() { f.mu.Lock(); f.chDown = false; f.mu.Unlock() }()
			f.log("fault: %s for %v", kind, f.t.ClickHouse)
			if err := d.CH.Stop(context.Background()); err != nil {
				f.fail(kind, err)
				return
			}
			f.count(kind)
			time.Sleep(f.t.ClickHouse)
			if err := d.CH.Start(context.Background()); err != nil {
				f.fail(kind, err)
			}
		}()
	case FaultPauseWorker:
		p := f.take(d.Workers)
		if p == nil {
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.release(p)
			f.log("fault: %s %s (pid %d) for %v", kind, p.Name, p.Pid(), f.t.Pause)
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				f.fail(kind, err)
				return
			}
			f.count(kind)
			time.Sleep(f.t.Pause)
			if err := p.Signal(syscall.SIGCONT); err != nil {
				f.fail(kind, err)
			}
		}()
	}
}
