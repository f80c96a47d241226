package analytics

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"docflow"
)

// DefaultSampleEvery is how often a Sampler samples.
const DefaultSampleEvery = 5 * time.Second

// Source returns one round of samples (lag per partition, this process's
// resources, …) as metrics stamped by the Sampler.
type Source func(ctx context.Context) ([]docflow.Metric, error)

// Sampler records the metrics of its sources every Every, from one
// goroutine, until Stop. A slow or failing source is bounded by Timeout and
// logged; it never stops the others.
type Sampler struct {
	Recorder docflow.Recorder
	Sources  []Source
	Every    time.Duration // default DefaultSampleEvery
	Timeout  time.Duration // per round (default Every)
	Log      zerolog.Logger

	stop func()
	done chan struct{}
	once sync.Once
}

// Start begins sampling; the first round runs at once.
func (s *Sampler) Start() {
	if s.Every <= 0 {
		s.Every = DefaultSampleEvery
	}
	if s.Timeout <= 0 {
		s.Timeout = s.Every
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.Every)
		defer t.Stop()
		for {
			s.round(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

func (s *Sampler) round(ctx context.Context) {
	now := time.Now()
	for _, src := range s.Sources {
		rctx, cancel := context.WithTimeout(ctx, s.Timeout)
		ms, err := src(rctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Debug().Err(err).Msg("analytics sample failed")
			}
			continue
		}
		for _, m := range ms {
			if m.Time.IsZero() {
				m.Time = now
			}
			s.Recorder.Record(m)
		}
	}
}

// Stop ends sampling and waits for the round in flight. Idempotent.
func (s *Sampler) Stop() {
	s.once.Do(func() {
		if s.stop != nil {
			s.stop()
			<-s.done
		}
	})
}

// ProcessName names this process in samples: host:pid.
func ProcessName() string {
	host, _ := os.Hostname()
	return host + ":" + strconv.Itoa(os.Getpid())
}

// ProcessSource samples this process: CPU percent of one core since the
// previous sample, resident memory, goroutines and, from stats (nil = 0),
// the metrics its recorder has dropped. role is stored as the Worker.
func ProcessSource(role string, stats func() docflow.RecorderStats) Source {
	name := ProcessName()
	var mu sync.Mutex
	lastCPU, lastWall := cpuTime(), time.Now()
	return func(context.Context) ([]docflow.Metric, error) {
		mu.Lock()
		cpu, wall := cpuTime(), time.Now()
		pct := 0.0
		if d := wall.Sub(lastWall); d > 0 {
			pct = 100 * float64(cpu-lastCPU) / float64(d)
		}
		lastCPU, lastWall = cpu, wall
		mu.Unlock()
		m := docflow.Metric{Kind: docflow.MetricProcess, Process: name, Worker: role,
			CPU: pct, RSS: rss(), Goroutines: runtime.NumGoroutine()}
		if stats != nil {
			m.Dropped = stats().Dropped
		}
		return []docflow.Metric{m}, nil
	}
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss is the resident set size from /proc/self/statm, or the Go runtime's
// view of memory obtained from the OS where /proc is missing.
func rss() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys)
}
